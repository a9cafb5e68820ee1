//! State commit messages: a subject a reviewer can skim, then `Loopx-*` trailers.

/// A commit message on the state branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub subject: String,
    pub body: Vec<String>,
    pub trailers: Vec<(&'static str, String)>,
}

impl Message {
    /// `op` becomes the `Loopx-Op` trailer.
    pub fn new(op: &str, subject: impl Into<String>) -> Self {
        Message {
            subject: subject.into(),
            body: Vec::new(),
            trailers: vec![("Loopx-Op", op.to_owned())],
        }
    }

    pub fn trailer(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.trailers.push((key, value.into()));
        self
    }

    pub fn line(mut self, line: impl Into<String>) -> Self {
        self.body.push(line.into());
        self
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(self.subject.lines().next().unwrap_or(""));
        out.push_str("\n\n");
        if !self.body.is_empty() {
            for line in &self.body {
                out.push_str(line);
                out.push('\n');
            }
            out.push('\n');
        }
        for (key, value) in &self.trailers {
            out.push_str(key);
            out.push_str(": ");
            out.push_str(&value.replace('\n', " "));
            out.push('\n');
        }
        out
    }
}

/// Reads the value of trailer `key` from a commit message.
pub fn trailer<'a>(message: &'a str, key: &str) -> impl Iterator<Item = &'a str> + 'a {
    let prefix = format!("{key}: ");
    message
        .lines()
        .filter_map(move |line| line.strip_prefix(prefix.as_str()))
}
