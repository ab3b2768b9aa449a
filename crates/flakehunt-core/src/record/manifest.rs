//! `manifest.json`: what a hunt is, written before its first attempt. Main type: [`Manifest`].

pub use crate::schema::manifest::{Kind, Manifest, FORMAT_VERSION};

/// The manifest as the record holds it.
pub trait WrittenManifest {
    /// The manifest as written into the record: redacted when [`Self::redacted`] says so, and
    /// then marked [`Self::withheld`] when that removed something.
    fn to_written(&self) -> Result<serde_json::Value, serde_json::Error>;
}

impl WrittenManifest for Manifest {
    fn to_written(&self) -> Result<serde_json::Value, serde_json::Error> {
        let raw = serde_json::to_value(self)?;
        if !self.redacted {
            return Ok(raw);
        }
        let mut written = raw.clone();
        if let Some(argv) = written.pointer_mut("/target/argv") {
            // An argv is redacted as one: the word after `--password` is a secret too.
            *argv = serde_json::to_value(if self.target.shell {
                self.target.argv.iter().map(|a| crate::redact::text(a).into_owned()).collect()
            } else {
                crate::redact::argv(&self.target.argv)
            })?;
        }
        for field in ["cells", "oracle", "extra", "plan"] {
            if let Some(v) = written.get_mut(field) {
                crate::redact::json(v);
            }
        }
        // A suite's test ids keep their shape and stay apart, as its attempts write them.
        if let (Some(setup), Some(v)) = (&self.extra.suite, written.pointer_mut("/extra/suite")) {
            *v = serde_json::to_value(crate::redact::ids::WrittenIds::new(&setup.selection).setup(setup))?;
        }
        if written != raw {
            written["withheld"] = serde_json::Value::Bool(true);
        }
        Ok(written)
    }
}
