//! `bitlkDump`: cryptsetup 2.6.1's `BITLK_dump` text, byte for byte.

use super::header::{Metadata, FVE_METADATA_SIZE};
use crate::formats::Description;
use std::fmt;

/// The description of a BitLocker volume (its `Display` is `cryptsetup bitlkDump`'s output).
#[derive(Debug, Clone)]
pub struct BitlkDescription {
    /// The device path as given (cryptsetup prints it so).
    pub path: String,
    /// The metadata.
    pub metadata: Metadata,
}

impl Description for BitlkDescription {}

impl fmt::Display for BitlkDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.metadata;
        writeln!(
            f,
            "Info for BITLK{} device {}.",
            if m.togo { " To Go" } else { "" },
            self.path
        )?;
        writeln!(f, "Version:      \t{}", m.version)?;
        writeln!(f, "GUID:         \t{}", m.guid)?;
        writeln!(f, "Sector size:  \t{} [bytes]", m.sector_size)?;
        writeln!(f, "Volume size:  \t{} [bytes]", m.volume_size)?;
        // ctime() ends with its own newline, or is NULL ("(null)", no newline) for a time
        // beyond what struct tm holds.
        match ctime(m.creation_time as i64) {
            Some(t) => writeln!(f, "Created:      \t{t}")?,
            None => write!(f, "Created:      \t(null)")?,
        }
        writeln!(
            f,
            "Description:  \t{}",
            m.description.as_deref().unwrap_or("(null)")
        )?;
        writeln!(f, "Cipher name:  \t{}", m.cipher.name())?;
        writeln!(f, "Cipher mode:  \t{}", m.cipher.mode)?;
        writeln!(f, "Cipher key:   \t{} bits", m.cipher.key_bits)?;
        writeln!(f)?;
        writeln!(f, "Keyslots:")?;
        for (i, v) in m.vmks.iter().enumerate() {
            writeln!(f, " {i}: VMK")?;
            if let Some(name) = &v.name {
                writeln!(f, "\tName:       \t{name}")?;
            }
            writeln!(f, "\tGUID:       \t{}", v.guid)?;
            writeln!(f, "\tProtection: \t{}", v.protection.text())?;
            write!(f, "\tSalt:       \t")?;
            for b in v.salt {
                write!(f, "{b:02x}")?;
            }
            writeln!(f)?;
            for k in &v.keys {
                writeln!(f, "\tKey data size:\t{} [bytes]", k.len())?;
            }
        }
        writeln!(f, " {}: FVEK", m.vmks.len())?;
        writeln!(
            f,
            "\tKey data size:\t{} [bytes]",
            m.fvek.as_ref().map_or(0, |k| k.data.len())
        )?;
        writeln!(f)?;
        writeln!(f, "Metadata segments:")?;
        for (i, o) in m.metadata_offsets.iter().enumerate() {
            writeln!(f, " {i}: FVE metadata area")?;
            writeln!(f, "\tOffset: \t{o} [bytes]")?;
            writeln!(f, "\tSize:   \t{FVE_METADATA_SIZE} [bytes]")?;
        }
        writeln!(f, " 3: Volume header")?;
        writeln!(f, "\tOffset: \t{} [bytes]", m.volume_header_offset)?;
        writeln!(f, "\tSize:   \t{} [bytes]", m.volume_header_size)?;
        writeln!(f, "\tCipher: \t{}", m.cipher.spec())
    }
}

/// C's `ctime()` in UTC without its newline (`Thu Jul  4 06:37:58 2019`); `None` where
/// glibc's `localtime` / `asctime` give NULL (the year does not fit `tm_year`).
///
/// lukskit prints the time in UTC; cryptsetup uses the local time zone (the same text where
/// the zone is UTC, as on servers and in the tests).
pub fn ctime(t: i64) -> Option<String> {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let weekday = DAYS[days.rem_euclid(7) as usize];
    // Howard Hinnant's civil_from_days, in i128 so no day count overflows.
    let z = i128::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i128::from(month <= 2);
    let tm_year = year - 1900;
    if tm_year < i128::from(i32::MIN) || tm_year > i128::from(i32::MAX - 1900) {
        return None;
    }
    Some(format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        weekday,
        MONTHS[(month - 1) as usize],
        day,
        secs / 3600,
        secs % 3600 / 60,
        secs % 60,
        year
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_as_glibc_in_utc() {
        assert_eq!(ctime(0).unwrap(), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(1_562_222_278).unwrap(), "Thu Jul  4 06:37:58 2019");
        assert_eq!(ctime(-1).unwrap(), "Wed Dec 31 23:59:59 1969");
        assert_eq!(ctime(951_782_400).unwrap(), "Tue Feb 29 00:00:00 2000");
        assert!(ctime(i64::MAX).is_none());
        assert!(ctime(i64::MIN).is_none());
    }
}
