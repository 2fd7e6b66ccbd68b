//! The options of cryptsetup 2.6.1 that lukskit parses outside its clap definition's visible
//! tables (hidden options: not implemented, or TrueCrypt/VeraCrypt's), and what the command
//! line gave ([`Given`]). Below [`crate::args`], [`crate::definition`] and [`crate::checks`],
//! which all read them.

/// cryptsetup 2.6.1 options that lukskit parses, so that `--test-args` judges a command line
/// as cryptsetup does, but does not implement: an action run with one of them fails with
/// [`crate::checks::not_implemented`]'s message. (long name, short name, takes a value)
pub const NOT_IMPLEMENTED: &[(&str, Option<char>, bool)] = &[("debug-json", None, false)];

/// cryptsetup's TrueCrypt/VeraCrypt options, parsed like [`NOT_IMPLEMENTED`]'s (hidden
/// arguments, read from [`Given`] and `Opts::veracrypt_pim`) and implemented.
pub const TCRYPT_OPTIONS: &[(&str, Option<char>, bool)] = &[
    ("disable-veracrypt", None, false),
    ("tcrypt-backup", None, false),
    ("tcrypt-hidden", None, false),
    ("tcrypt-system", None, false),
    ("veracrypt", None, false),
    ("veracrypt-pim", None, true),
    ("veracrypt-query-pim", None, false),
];

/// The hidden options ([`NOT_IMPLEMENTED`], [`TCRYPT_OPTIONS`]) whose value is a number (the
/// others take a string).
pub const NUMERIC: &[&str] = &["veracrypt-pim"];

/// What the command line gave, as the checks need it: the long names of the options given
/// (in command-line order) and the values of the options [`crate::args::Opts`] has no field for.
#[derive(Debug, Default, Clone)]
pub struct Given {
    /// Long names of the options on the command line, in the order given.
    pub options: Vec<String>,
    /// Values of the options given that take a string (by long name), for the options
    /// whose checks need the value as typed.
    pub values: Vec<(String, String)>,
}

impl Given {
    /// Whether the option (long name) was given.
    pub fn has(&self, long: &str) -> bool {
        self.options.iter().any(|o| o == long)
    }

    /// The value given to an option that takes one (long name), if it was given.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| k == long)
            .map(|(_, v)| v.as_str())
    }
}
