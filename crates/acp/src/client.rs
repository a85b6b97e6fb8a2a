//! What the client said about itself in `initialize`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::mapping::Takes;

#[derive(Default)]
pub(crate) struct Client {
    initialized: AtomicBool,
    takes: Mutex<Takes>,
    fs_read: AtomicBool,
    terminal_output: AtomicBool,
    elicitation_form: AtomicBool,
    elicitation_url: AtomicBool,
    fs_write: AtomicBool,
}

impl Client {
    pub fn set(&self, takes: Takes, fs_read: bool, terminal_output: bool) {
        *self.takes.lock().unwrap_or_else(|p| p.into_inner()) = takes;
        self.fs_read.store(fs_read, Ordering::Relaxed);
        self.terminal_output
            .store(terminal_output, Ordering::Relaxed);
        self.initialized.store(true, Ordering::Release);
    }

    /// Set before `set` (which marks the client initialized).
    pub fn set_elicitation_form(&self, form: bool) {
        self.elicitation_form.store(form, Ordering::Relaxed);
    }

    /// Set before `set`: the client advertised `elicitation.url`.
    pub fn set_elicitation_url(&self, url: bool) {
        self.elicitation_url.store(url, Ordering::Relaxed);
    }

    /// The client advertised `elicitation.url`: `elicitation/create` in URL mode.
    pub fn elicitation_url(&self) -> bool {
        self.elicitation_url.load(Ordering::Relaxed)
    }

    /// Set before `set`: the client advertised `fs.writeTextFile`.
    pub fn set_fs_write(&self, write: bool) {
        self.fs_write.store(write, Ordering::Relaxed);
    }

    pub fn fs_write(&self) -> bool {
        self.fs_write.load(Ordering::Relaxed)
    }

    /// The client advertised `elicitation.form`: `elicitation/create` in form mode.
    pub fn elicitation_form(&self) -> bool {
        self.elicitation_form.load(Ordering::Relaxed)
    }

    pub fn initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// The optional `session/update`s the client advertised.
    pub fn takes(&self) -> Takes {
        *self.takes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The client draws commands as terminals (`_meta.terminal_output`, `crate::terminal`).
    pub fn terminal_output(&self) -> bool {
        self.terminal_output.load(Ordering::Relaxed)
    }

    /// The client advertised `fs.readTextFile`.
    pub fn fs_read(&self) -> bool {
        self.fs_read.load(Ordering::Relaxed)
    }
}
