//! The rule list as ipfw keeps it: rules in ascending number, several
//! rules may share a number (kept in the order they were added), and
//! `delete N` removes every rule numbered `N` (ipfw(8): "a rule number
//! ... the same number can be used for several rules").

use std::collections::BTreeMap;
use std::ops::RangeBounds;

use crate::ast::RuleSpec;

/// The rules by number, in the order they are checked: ascending
/// numbers, and rules that share a number in the order they were added.
/// Iterating gives `(&number, &rule)` pairs, one per rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    by_number: BTreeMap<u32, Vec<RuleSpec>>,
    len: usize,
}

impl Rules {
    /// No rules.
    pub fn new() -> Rules {
        Rules::default()
    }

    /// Adds `rule` as number `n`, after any rule already numbered `n`.
    pub fn insert(&mut self, n: u32, rule: RuleSpec) {
        self.by_number.entry(n).or_default().push(rule);
        self.len += 1;
    }

    /// Removes every rule numbered `n`; returns them (`None` if there was
    /// none).
    pub fn remove(&mut self, n: &u32) -> Option<Vec<RuleSpec>> {
        let out = self.by_number.remove(n)?;
        self.len -= out.len();
        Some(out)
    }

    /// Removes every rule.
    pub fn clear(&mut self) {
        self.by_number.clear();
        self.len = 0;
    }

    /// Whether some rule is numbered `n`.
    pub fn contains_key(&self, n: &u32) -> bool {
        self.by_number.contains_key(n)
    }

    /// The first rule numbered `n`.
    pub fn get(&self, n: &u32) -> Option<&RuleSpec> {
        self.by_number.get(n).and_then(|v| v.first())
    }

    /// The rules numbered `n`, in the order added (empty if none).
    pub fn numbered(&self, n: &u32) -> &[RuleSpec] {
        self.by_number.get(n).map_or(&[], Vec::as_slice)
    }

    /// How many rules (a shared number counts each of its rules).
    pub fn len(&self) -> usize {
        self.len
    }

    /// No rules.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every rule in order, with its number.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&u32, &RuleSpec)> + Clone + '_ {
        self.by_number
            .iter()
            .flat_map(|(n, rules)| rules.iter().map(move |r| (n, r)))
    }

    /// The rules numbered within `range`, in order, with their numbers.
    pub fn range(
        &self,
        range: impl RangeBounds<u32>,
    ) -> impl DoubleEndedIterator<Item = (&u32, &RuleSpec)> + '_ {
        self.by_number
            .range(range)
            .flat_map(|(n, rules)| rules.iter().map(move |r| (n, r)))
    }

    /// Each rule's number, in order (a shared number once per rule).
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &u32> + '_ {
        self.iter().map(|(n, _)| n)
    }

    /// The rules in order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &RuleSpec> + '_ {
        self.iter().map(|(_, r)| r)
    }

    /// The highest number in use.
    pub fn last_number(&self) -> Option<u32> {
        self.by_number.keys().next_back().copied()
    }
}

impl<'a> IntoIterator for &'a Rules {
    type Item = (&'a u32, &'a RuleSpec);
    type IntoIter = Box<dyn DoubleEndedIterator<Item = (&'a u32, &'a RuleSpec)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl FromIterator<(u32, RuleSpec)> for Rules {
    /// The rules in the order given (each after those of its number).
    fn from_iter<I: IntoIterator<Item = (u32, RuleSpec)>>(iter: I) -> Rules {
        let mut out = Rules::new();
        for (n, r) in iter {
            out.insert(n, r);
        }
        out
    }
}

impl Extend<(u32, RuleSpec)> for Rules {
    fn extend<I: IntoIterator<Item = (u32, RuleSpec)>>(&mut self, iter: I) {
        for (n, r) in iter {
            self.insert(n, r);
        }
    }
}

impl From<BTreeMap<u32, RuleSpec>> for Rules {
    fn from(map: BTreeMap<u32, RuleSpec>) -> Rules {
        map.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Action;

    fn rule(a: Action) -> RuleSpec {
        RuleSpec::new(a)
    }

    /// Pass proves: rules that share a number keep the order they were
    /// added in, between lower and higher numbers; removing a number
    /// removes all of its rules; the count follows.
    #[test]
    fn shared_numbers_keep_their_order() {
        let mut r = Rules::new();
        r.insert(200, rule(Action::Deny));
        r.insert(100, rule(Action::Pipe(1)));
        r.insert(200, rule(Action::Pipe(2)));
        r.insert(100, rule(Action::Allow));
        let order: Vec<(u32, Action)> = r.iter().map(|(n, x)| (*n, x.action)).collect();
        assert_eq!(
            order,
            vec![
                (100, Action::Pipe(1)),
                (100, Action::Allow),
                (200, Action::Deny),
                (200, Action::Pipe(2)),
            ]
        );
        assert_eq!((r.len(), r.last_number()), (4, Some(200)));
        assert_eq!(r.remove(&100).map(|v| v.len()), Some(2));
        assert_eq!(r.len(), 2);
        assert!(r.remove(&100).is_none());
        assert_eq!(r.get(&200).map(|x| x.action), Some(Action::Deny));
        r.clear();
        assert!(r.is_empty());
    }
}
