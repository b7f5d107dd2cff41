//! The frame buffer pool: fixed-size buffers, allocated on demand up to a
//! global cap and recycled through a free list, so memory never grows past
//! the cap (issue: "a global cap on queued bytes") and steady-state
//! forwarding allocates nothing. A packet descriptor's `buf` is an index
//! here; the bytes stay put from reception to transmission.

/// Size of one buffer: an MTU-1500 Ethernet frame with VLAN tags, rounded.
pub const BUF_SIZE: usize = 2048;

/// Buffers, their free list, and the cap.
#[derive(Debug)]
pub struct BufferPool {
    // Boxed so that growing the index never moves (copies) the buffers:
    // up to the cap's worth of frame data stays where it was written.
    #[allow(clippy::vec_box)]
    bufs: Vec<Box<[u8; BUF_SIZE]>>,
    lens: Vec<u16>,
    free: Vec<u32>,
    max: usize,
}

impl BufferPool {
    /// A pool that holds at most `cap_bytes` of buffers.
    pub fn with_cap(cap_bytes: u64) -> BufferPool {
        let max = (cap_bytes / BUF_SIZE as u64).clamp(1, u32::MAX as u64) as usize;
        BufferPool {
            bufs: Vec::new(),
            lens: Vec::new(),
            free: Vec::new(),
            max,
        }
    }

    /// The most buffers the pool will hold.
    pub fn max_buffers(&self) -> usize {
        self.max
    }

    /// Buffers handed out now.
    pub fn in_use(&self) -> usize {
        self.bufs.len() - self.free.len()
    }

    /// Bytes of buffer memory allocated so far (never more than the cap).
    pub fn allocated_bytes(&self) -> u64 {
        (self.bufs.len() * BUF_SIZE) as u64
    }

    /// A free buffer, or `None` at the cap.
    pub fn take(&mut self) -> Option<u32> {
        if let Some(i) = self.free.pop() {
            return Some(i);
        }
        if self.bufs.len() >= self.max {
            return None;
        }
        self.bufs.push(Box::new([0u8; BUF_SIZE]));
        self.lens.push(0);
        Some(self.bufs.len() as u32 - 1)
    }

    /// Give buffer `i` back.
    pub fn give(&mut self, i: u32) {
        self.free.push(i);
    }

    /// The whole buffer `i`, to receive into.
    pub fn space(&mut self, i: u32) -> &mut [u8; BUF_SIZE] {
        &mut self.bufs[i as usize]
    }

    /// Record that buffer `i` holds a frame of `len` bytes.
    pub fn set_len(&mut self, i: u32, len: usize) {
        self.lens[i as usize] = len.min(BUF_SIZE) as u16;
    }

    /// The frame in buffer `i`.
    pub fn frame(&self, i: u32) -> &[u8] {
        &self.bufs[i as usize][..self.lens[i as usize] as usize]
    }

    /// The frame in buffer `i`, mutable (corruption flips bits in place).
    pub fn frame_mut(&mut self, i: u32) -> &mut [u8] {
        let n = self.lens[i as usize] as usize;
        &mut self.bufs[i as usize][..n]
    }

    /// Copy buffer `i` into a new buffer (for duplicates).
    pub fn clone_buf(&mut self, i: u32) -> Option<u32> {
        let j = self.take()?;
        let n = self.lens[i as usize] as usize;
        let src: [u8; BUF_SIZE] = *self.bufs[i as usize];
        self.bufs[j as usize][..n].copy_from_slice(&src[..n]);
        self.lens[j as usize] = n as u16;
        Some(j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_bounds_allocation_and_buffers_recycle() {
        let mut p = BufferPool::with_cap(3 * BUF_SIZE as u64);
        let a = p.take().expect("1");
        let _b = p.take().expect("2");
        let _c = p.take().expect("3");
        assert_eq!(p.take(), None);
        p.give(a);
        assert_eq!(p.take(), Some(a));
        assert_eq!(p.allocated_bytes(), 3 * BUF_SIZE as u64);
    }
}
