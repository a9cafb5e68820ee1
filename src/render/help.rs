//! Text of the commands that install help: `install-man`.

use crate::ops::install_man::InstallManReport;

pub fn install_man(r: &InstallManReport) -> String {
    let mut out = format!(
        "{} manual pages in {} ({} written, {} unchanged)\n",
        r.pages.len(),
        r.dir.display(),
        r.written,
        r.pages.len() - r.written
    );
    if r.not_man1 {
        out.push_str("note: `man` looks for these pages in a directory named man1\n");
    }
    match &r.manpath_needed {
        None => out.push_str("`git loopx --help` and `man git-loopx` show them\n"),
        Some(root) => out.push_str(&format!(
            "`man` does not look there yet; add this to your shell's profile:\n  \
             export MANPATH=\"{}:$MANPATH\"\n\
             (the trailing `:` left when MANPATH was unset keeps man's default path)\n",
            root.display()
        )),
    }
    out
}
