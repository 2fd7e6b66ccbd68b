//! Tables: typed targets (crypt, linear, zero, error) and the `<start> <length> <type>
//! <params>` lines `dmsetup table` prints.

use zeroize::Zeroizing;

use crate::crypt::CryptTarget;
use crate::devt::DevT;
use crate::error::{DmError, Result};
use crate::ioctl::{TargetSpec, TargetStatus};

/// A `linear` target: sectors mapped 1:1 onto a device from `offset` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinearTarget {
    /// First sector in the mapping.
    pub start: u64,
    /// Length in sectors.
    pub sectors: u64,
    /// The device.
    pub device: DevT,
    /// First sector on the device.
    pub offset: u64,
}

/// A target of any type we know, or verbatim.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Target {
    /// `crypt`.
    Crypt(CryptTarget),
    /// `linear`.
    Linear(LinearTarget),
    /// `zero`: reads zeros, discards writes.
    Zero {
        /// First sector.
        start: u64,
        /// Length in sectors.
        sectors: u64,
    },
    /// `error`: fails every I/O.
    Error {
        /// First sector.
        start: u64,
        /// Length in sectors.
        sectors: u64,
    },
    /// Any other target, kept verbatim (its parameters are zeroized on drop).
    Other {
        /// First sector.
        start: u64,
        /// Length in sectors.
        sectors: u64,
        /// Target type.
        target_type: String,
        /// Parameter string.
        params: Zeroizing<String>,
    },
}

impl Target {
    /// First sector of the target.
    pub fn start(&self) -> u64 {
        match self {
            Target::Crypt(c) => c.start,
            Target::Linear(l) => l.start,
            Target::Zero { start, .. }
            | Target::Error { start, .. }
            | Target::Other { start, .. } => *start,
        }
    }

    /// Length in sectors.
    pub fn sectors(&self) -> u64 {
        match self {
            Target::Crypt(c) => c.sectors,
            Target::Linear(l) => l.sectors,
            Target::Zero { sectors, .. }
            | Target::Error { sectors, .. }
            | Target::Other { sectors, .. } => *sectors,
        }
    }

    /// The kernel's target type name.
    pub fn target_type(&self) -> &str {
        match self {
            Target::Crypt(_) => CryptTarget::TARGET_TYPE,
            Target::Linear(_) => "linear",
            Target::Zero { .. } => "zero",
            Target::Error { .. } => "error",
            Target::Other { target_type, .. } => target_type,
        }
    }

    /// The parameter string (zeroizing: a crypt target's holds its key).
    pub fn params(&self) -> Zeroizing<String> {
        match self {
            Target::Crypt(c) => c.params(),
            Target::Linear(l) => Zeroizing::new(format!("{} {}", l.device, l.offset)),
            Target::Zero { .. } | Target::Error { .. } => Zeroizing::new(String::new()),
            Target::Other { params, .. } => params.clone(),
        }
    }

    /// The line `dmsetup table` prints for this target: `<start> <length> <type> <params>`.
    /// Like dmsetup, a parameterless target keeps the space before its (empty) parameters
    /// (observed: `0 1024 zero `).
    pub fn to_line(&self) -> Zeroizing<String> {
        let p = self.params();
        let mut s = Zeroizing::new(format!(
            "{} {} {} ",
            self.start(),
            self.sectors(),
            self.target_type()
        ));
        s.push_str(&p);
        s
    }

    /// Interpret one target of a kernel reply. `with_key = false` redacts a hex crypt key.
    pub fn from_parts(
        start: u64,
        sectors: u64,
        target_type: &str,
        params: &str,
        with_key: bool,
    ) -> Result<Target> {
        Ok(match target_type {
            "crypt" => Target::Crypt(CryptTarget::parse_params(start, sectors, params, with_key)?),
            "linear" => {
                let mut w = params.split_whitespace();
                let device: DevT = w
                    .next()
                    .ok_or_else(|| DmError::Parse("linear target: missing device".into()))?
                    .parse()?;
                let offset = w
                    .next()
                    .and_then(|o| o.parse().ok())
                    .ok_or_else(|| DmError::Parse("linear target: offset".into()))?;
                if w.next().is_some() {
                    return Err(DmError::Parse("linear target: extra arguments".into()));
                }
                Target::Linear(LinearTarget {
                    start,
                    sectors,
                    device,
                    offset,
                })
            }
            "zero" => Target::Zero { start, sectors },
            "error" => Target::Error { start, sectors },
            _ => Target::Other {
                start,
                sectors,
                target_type: target_type.to_string(),
                params: Zeroizing::new(params.to_string()),
            },
        })
    }

    /// Parse a `dmsetup table` line: `<start> <length> <type> [<params>]`.
    pub fn parse_line(line: &str, with_key: bool) -> Result<Target> {
        let line = line.trim_end_matches(['\n', '\r']);
        let mut it = line.splitn(4, ' ');
        let num = |s: Option<&str>, what: &str| {
            s.and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| DmError::Parse(format!("table line: {what}")))
        };
        let start = num(it.next(), "start")?;
        let sectors = num(it.next(), "length")?;
        let ty = it
            .next()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| DmError::Parse("table line: target type".into()))?;
        Target::from_parts(start, sectors, ty, it.next().unwrap_or(""), with_key)
    }

    /// The spec a table load sends for this target (validating crypt targets first).
    pub fn to_spec(&self) -> Result<TargetSpec> {
        if let Target::Crypt(c) = self {
            c.validate()?;
        }
        if self.sectors() == 0 {
            return Err(DmError::InvalidArgument("a target of length 0".into()));
        }
        Ok(TargetSpec {
            start: self.start(),
            length: self.sectors(),
            target_type: self.target_type().to_string(),
            params: self.params(),
        })
    }

    /// Interpret a TABLE_STATUS (table type) target.
    pub fn from_status(t: &TargetStatus, with_key: bool) -> Result<Target> {
        Target::from_parts(t.start, t.length, &t.target_type, &t.params, with_key)
    }
}

/// Check that `targets` cover `0..total` without gaps or overlaps, in order; returns the
/// total length in sectors.
pub fn check_contiguous(targets: &[Target]) -> Result<u64> {
    let mut next = 0u64;
    for t in targets {
        if t.start() != next {
            return Err(DmError::InvalidArgument(format!(
                "table targets must be contiguous: expected start {next}, got {}",
                t.start()
            )));
        }
        next = next
            .checked_add(t.sectors())
            .ok_or_else(|| DmError::InvalidArgument("table length overflows".into()))?;
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_zero_error_lines() {
        let l = Target::parse_line("0 2048 linear 254:0 4096", true).unwrap();
        assert_eq!(l.to_line().as_str(), "0 2048 linear 254:0 4096");
        let z = Target::parse_line("2048 8 zero", true).unwrap();
        assert!(matches!(
            z,
            Target::Zero {
                start: 2048,
                sectors: 8
            }
        ));
        assert_eq!(z.to_line().as_str(), "2048 8 zero ");
        let e = Target::parse_line("0 8 error", true).unwrap();
        assert_eq!(e.to_line().as_str(), "0 8 error ");
        let o = Target::parse_line("0 8 striped 2 128 254:0 0 254:1 0", true).unwrap();
        assert_eq!(o.target_type(), "striped");
        assert_eq!(o.to_line().as_str(), "0 8 striped 2 128 254:0 0 254:1 0");
        assert!(Target::parse_line("0 x linear 254:0 0", true).is_err());
        assert!(Target::parse_line("0 8 linear 254:0", true).is_err());
    }

    #[test]
    fn contiguity() {
        let t = vec![
            Target::Zero {
                start: 0,
                sectors: 8,
            },
            Target::Error {
                start: 8,
                sectors: 8,
            },
        ];
        assert_eq!(check_contiguous(&t).unwrap(), 16);
        let gap = vec![
            Target::Zero {
                start: 0,
                sectors: 8,
            },
            Target::Error {
                start: 9,
                sectors: 8,
            },
        ];
        assert!(check_contiguous(&gap).is_err());
    }
}
