//! The shape of a vetted rule, as `vetted_table.rs` writes each one and
//! `vetted.rs` matches it.

/// One rule of the table.
pub(crate) struct Vetted {
    /// The rule's id with `-` as `_`: what a leak's `kind` says.
    pub kind: &'static str,
    pub regex: &'static str,
    /// The least Shannon entropy (bits a byte) a secret must have; 0: any.
    pub entropy: f64,
    /// The capture group that is the secret; 0: the first that matched.
    pub group: usize,
    /// Lower-case words one of which must occur for the rule to run.
    pub keywords: &'static [&'static str],
    /// The literal a match starts with, when it has one of four bytes or
    /// more: such rules also run on split text.
    pub prefix: &'static str,
    pub allow: &'static [Allow],
}

/// Secrets a rule lets through: one a regex matches, or one holding a
/// stopword.
pub(crate) struct Allow {
    pub regexes: &'static [&'static str],
    pub stopwords: &'static [&'static str],
}
