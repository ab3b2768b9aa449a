//! One condition to run the target under. Main type: [`CellSpec`].

use serde::{Deserialize, Serialize};

use crate::profile::Profile;

/// One setting of an overlay: what a matrix dimension (or the user) changes for a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Setting {
    /// An environment variable set (`Some`) or removed (`None`).
    Env {
        /// Variable name.
        name: String,
        /// Its value, or `None` to unset it.
        value: Option<String>,
    },
    /// A resource limit (soft; the hard limit is raised only as far as allowed).
    Rlimit {
        /// Resource name (`nofile`).
        name: String,
        /// The limit; `None` is unlimited.
        value: Option<u64>,
    },
    /// A `{name}` placeholder in the argv.
    Placeholder {
        /// Placeholder name.
        name: String,
        /// Replacement.
        value: String,
    },
}

impl Setting {
    /// The dimension this setting belongs to.
    pub fn name(&self) -> &str {
        match self {
            Setting::Env { name, .. } | Setting::Rlimit { name, .. } | Setting::Placeholder { name, .. } => name,
        }
    }

    /// The value as users write it (`unset`, `unlimited` for the absent cases).
    pub fn value_text(&self) -> String {
        match self {
            Setting::Env { value: Some(v), .. } | Setting::Placeholder { value: v, .. } => v.clone(),
            Setting::Env { value: None, .. } => "unset".into(),
            Setting::Rlimit { value: Some(v), .. } => v.to_string(),
            Setting::Rlimit { value: None, .. } => "unlimited".into(),
        }
    }
}

/// A cell as recorded in the manifest: a profile (sweep), an overlay (matrix), or a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    /// Unique name within the hunt.
    pub name: String,
    /// The scheduling profile, for sweep cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// The environment overlay, for matrix cells.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlay: Vec<Setting>,
}

impl CellSpec {
    /// A sweep cell running `profile`.
    pub fn for_profile(profile: Profile) -> Self {
        Self { name: profile.name.clone(), profile: Some(profile), overlay: Vec::new() }
    }
}
