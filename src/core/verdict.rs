//! The three answers the gate can give, and how several of them combine.

use serde::Serialize;

/// `ReadmissionGate: yes|no|unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Yes,
    Unknown,
    No,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Yes => "yes",
            Verdict::Unknown => "unknown",
            Verdict::No => "no",
        }
    }

    /// What the adapter does with this verdict.
    pub fn mode(self) -> &'static str {
        match self {
            Verdict::Yes => "writes",
            Verdict::Unknown | Verdict::No => "observe-only",
        }
    }

    /// The worst of several verdicts: a proven *no* outranks a *unknown*, which outranks *yes*.
    pub fn worst(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        verdicts.into_iter().max().unwrap_or(Verdict::Yes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_prefers_no_then_unknown() {
        use Verdict::*;
        assert_eq!(Verdict::worst([Yes, Unknown, Yes]), Unknown);
        assert_eq!(Verdict::worst([Unknown, No, Yes]), No);
        assert_eq!(Verdict::worst([]), Yes);
    }
}
