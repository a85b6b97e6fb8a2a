//! The system prompt: who the agent is, where it works, and the workspace's own instructions
//! (`AGENTS.md`, falling back to `CLAUDE.md`).

use std::path::Path;

/// Instruction files larger than this are cut (they are sent with every request).
const MAX_INSTRUCTIONS_BYTES: usize = 64 * 1024;

pub fn system_prompt(cwd: &Path) -> String {
    let mut s = String::from(
        "You are Ferrite, a coding agent working inside the user's editor. You help with software \
         engineering tasks in the workspace below: read code before changing it, make focused \
         changes, run the project's checks when you can, and say briefly what you did. Use the \
         tools you are given; keep the plan up to date with update_plan for multi-step work.\n\n",
    );
    s.push_str(&format!("Workspace: {}\n", cwd.display()));
    s.push_str(&format!(
        "Platform: {} {}\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    s.push_str(&format!("Date: {}\n", &crate::time::now_rfc3339()[..10]));
    for name in ["AGENTS.md", "CLAUDE.md"] {
        if let Ok(text) = std::fs::read_to_string(cwd.join(name)) {
            let mut text = text;
            if text.len() > MAX_INSTRUCTIONS_BYTES {
                let mut cut = MAX_INSTRUCTIONS_BYTES;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            s.push_str(&format!(
                "\nInstructions from the workspace's {name}:\n\n{text}\n"
            ));
            break;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_md_wins_over_claude_md() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("CLAUDE.md"), "claude rules").unwrap();
        assert!(system_prompt(d.path()).contains("claude rules"));
        std::fs::write(d.path().join("AGENTS.md"), "agents rules").unwrap();
        let p = system_prompt(d.path());
        assert!(p.contains("agents rules") && !p.contains("claude rules"));
    }
}
