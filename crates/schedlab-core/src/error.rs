//! The one error type of the core. Every variant carries enough context (file,
//! key, expectation) for a one-line message a user can act on.

use thiserror::Error;

/// Errors of schedlab-core. User input never panics: it becomes one of these.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SchedlabError {
    /// A spec (machine, workload, policy) is malformed or has an impossible value.
    /// `source` names the file or preset, `key` the offending key path.
    #[error("{file}: {key}: {expected}")]
    Spec {
        /// The file path or preset name the value came from.
        file: String,
        /// Dotted key path, e.g. `topology.threads_per_core`.
        key: String,
        /// What was expected, and what was found.
        expected: String,
    },
    /// A name (machine, workload, policy, feature) that does not exist.
    #[error("unknown {kind} '{name}'; valid: {valid}")]
    UnknownName {
        /// What kind of name: "machine", "workload", "policy", "feature".
        kind: String,
        /// The name given.
        name: String,
        /// The valid choices, comma separated.
        valid: String,
    },
    /// A run failed at run time (a broken invariant the checker caught, or a
    /// workload that cannot finish, such as a deadlock).
    #[error("run failed: {0}")]
    Runtime(String),
    /// The run was stopped by [`crate::api::request_stop`] (Ctrl-C, SIGTERM)
    /// before it finished; `events` is how many events it had handled.
    #[error("run interrupted after {events} events")]
    Interrupted {
        /// Events handled before the stop was seen.
        events: u64,
    },
}

impl SchedlabError {
    /// Shorthand for [`SchedlabError::Spec`].
    pub fn spec(file: impl Into<String>, key: impl Into<String>, expected: impl Into<String>) -> Self {
        SchedlabError::Spec { file: file.into(), key: key.into(), expected: expected.into() }
    }

    /// Whether the error is the user's input (exit status 2) rather than a
    /// run-time failure (exit status 1).
    pub fn is_usage(&self) -> bool {
        !matches!(self, SchedlabError::Runtime(_) | SchedlabError::Interrupted { .. })
    }
}

/// Result alias of the core.
pub type Result<T> = std::result::Result<T, SchedlabError>;
