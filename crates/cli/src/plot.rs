//! `pipelab plot INPUT -o OUT.svg|OUT.png`: graphs of a report.
//!
//! The reading and the drawing are [`pipelab_plot`]'s (the input's kind
//! told from its content, one model of named series, `plotters`). Here:
//! the arguments, the checks of the input and output files, reading the
//! input as text, the errors and their exit statuses, and writing the
//! image.

use clap::Args;
use pipelab_plot::{draw, Kind, Missing};
use std::path::{Path, PathBuf};

/// `pipelab plot` arguments.
#[derive(Args, Debug)]
pub struct PlotArgs {
    /// The report: `pipelab sim --json` (with `--interval` for graphs over
    /// time), a live `--stats` file, `pipelab probe send --json`, the CSV
    /// of `pipelab probe recv --series`, or samples (`{"samples": [{"name":
    /// ..., "values": [...]}]}`). Its kind is told from its content.
    pub input: PathBuf,
    /// The image to write: `.svg` or `.png`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// The graph; by default the best the input has (throughput, then
    /// scatter, delay, cdf, shares).
    #[arg(long, value_enum)]
    pub kind: Option<Kind>,
    /// The image's size in pixels, WIDTHxHEIGHT.
    #[arg(
        long,
        default_value = "800x480",
        value_parser = size_arg,
        allow_hyphen_values = true
    )]
    pub size: (u32, u32),
}

fn size_arg(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("'{s}': give WIDTHxHEIGHT in pixels, e.g. 800x480");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (
        w.trim().parse().map_err(|_| bad())?,
        h.trim().parse().map_err(|_| bad())?,
    );
    let sides = pipelab_plot::SIDES;
    if !sides.contains(&w) || !sides.contains(&h) {
        return Err(format!(
            "'{s}': each side must be {} to {} pixels",
            sides.start(),
            sides.end()
        ));
    }
    Ok((w, h))
}

/// The format of the output, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Svg,
    Png,
}

/// Why `pipelab plot` cannot draw.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The input cannot be read.
    #[error("error: cannot read {}: {source}", path.display())]
    Read {
        /// The input.
        path: PathBuf,
        /// Why.
        source: pipelab_lang::files::FileError,
    },
    /// The input is not what `plot` reads.
    #[error("error: {}: {message}", path.display())]
    Input {
        /// The input.
        path: PathBuf,
        /// What was expected.
        message: String,
    },
    /// The output's extension is neither `.svg` nor `.png`.
    #[error("error: {}: unknown image format: give a file ending in .svg or .png", path.display())]
    Extension {
        /// The output.
        path: PathBuf,
    },
    /// The input has nothing for this kind.
    #[error("error: {} ({what}) has no {kind} graph: {why}", path.display(), kind = kind.name())]
    Kind {
        /// The input.
        path: PathBuf,
        /// What the input is.
        what: &'static str,
        /// The kind asked for.
        kind: Kind,
        /// Why, and what it has instead.
        why: String,
    },
    /// The input holds no data to draw at all.
    #[error("error: {} ({what}): nothing to plot: {why}", path.display())]
    Empty {
        /// The input.
        path: PathBuf,
        /// What the input is.
        what: &'static str,
        /// Why.
        why: String,
    },
    /// Drawing failed.
    #[error("error: cannot draw {}: {message}", path.display())]
    Draw {
        /// The output.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The output is the input.
    #[error(transparent)]
    SameFile(#[from] crate::outputs::SameFile),
    /// The output cannot be written.
    #[error("error: cannot write {}: {source}", path.display())]
    Write {
        /// The output.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl PlotError {
    /// The exit status: 1 when drawing or writing failed, 2 for what the
    /// user gave.
    pub fn code(&self) -> u8 {
        match self {
            PlotError::Draw { .. } | PlotError::Write { .. } => 1,
            _ => 2,
        }
    }
}

fn format_of(path: &Path) -> Result<Format, PlotError> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("svg") => Ok(Format::Svg),
        Some("png") => Ok(Format::Png),
        _ => Err(PlotError::Extension {
            path: path.to_path_buf(),
        }),
    }
}

/// Run `pipelab plot`: what it wrote, one line.
pub fn run(a: &PlotArgs) -> Result<String, PlotError> {
    let format = format_of(&a.output)?;
    crate::outputs::check(&[
        ("INPUT", Some(a.input.as_path()), crate::outputs::Use::Reads),
        ("-o", Some(a.output.as_path()), crate::outputs::Use::Writes),
    ])?;
    let text = crate::read_text(&a.input).map_err(|e| match e {
        crate::error::ConfigFileError::Read(source) => PlotError::Read {
            path: a.input.clone(),
            source,
        },
        other => PlotError::Input {
            path: a.input.clone(),
            message: other.to_string(),
        },
    })?;
    let data = pipelab_plot::read(&text).map_err(|message| PlotError::Input {
        path: a.input.clone(),
        message,
    })?;
    let kind = data.choose(a.kind).map_err(|missing| match missing {
        Missing::Kind { kind, why } => PlotError::Kind {
            path: a.input.clone(),
            what: data.what,
            kind,
            why,
        },
        Missing::Empty { why } => PlotError::Empty {
            path: a.input.clone(),
            what: data.what,
            why,
        },
    })?;
    let draw_err = |message: String| PlotError::Draw {
        path: a.output.clone(),
        message,
    };
    let (w, h) = a.size;
    let bytes = match format {
        Format::Svg => draw::svg(&data, kind, (w, h))
            .map_err(draw_err)?
            .into_bytes(),
        Format::Png => draw::png(&data, kind, (w, h)).map_err(draw_err)?,
    };
    pipelab_lang::output::create_output(&a.output)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
        .map_err(|source| PlotError::Write {
            path: a.output.clone(),
            source,
        })?;
    Ok(format!(
        "{}: {} graph of {} ({}), {w}x{h}\n",
        a.output.display(),
        kind.name(),
        a.input.display(),
        data.what
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_and_bounded() {
        assert_eq!(size_arg("800x480"), Ok((800, 480)));
        assert_eq!(size_arg("1024X768"), Ok((1024, 768)));
        assert!(size_arg("800").is_err());
        assert!(size_arg("10x10").is_err_and(|e| e.contains("200 to 8000")));
        assert!(size_arg("axb").is_err());
    }

    #[test]
    fn formats_come_from_the_extension() {
        assert_eq!(format_of(Path::new("a.SVG")).ok(), Some(Format::Svg));
        assert_eq!(format_of(Path::new("a.png")).ok(), Some(Format::Png));
        assert!(format_of(Path::new("a.jpg")).is_err());
        assert!(format_of(Path::new("a")).is_err());
    }
}
