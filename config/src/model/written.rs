//! Settings most of a large configuration leaves unwritten, held on the
//! heap only once one is written.

use serde::Serialize;

/// A `T` of settings that most real servers or checkers leave unwritten:
/// read and written as a `T` (it dereferences to one, mutably too, and
/// serializes as one), but held on the heap only once something is
/// written. 100,000 real servers or checkers would otherwise each carry
/// their whole `T` of `None`s.
#[derive(Clone)]
pub struct Written<T: Unwritten>(Option<Box<T>>);

/// Settings with nothing written: what an empty [`Written`] reads as.
pub trait Unwritten: Default + PartialEq + 'static {
    fn unwritten() -> &'static Self;
}

impl<T: Unwritten> Written<T> {
    /// Whether nothing is written (or everything written was unset again).
    pub fn is_empty(&self) -> bool {
        **self == *T::unwritten()
    }
}

impl<T: Unwritten> Default for Written<T> {
    fn default() -> Self {
        Written(None)
    }
}

impl<T: Unwritten> From<T> for Written<T> {
    fn from(settings: T) -> Self {
        if settings == *T::unwritten() {
            Written(None)
        } else {
            Written(Some(Box::new(settings)))
        }
    }
}

impl<T: Unwritten> std::ops::Deref for Written<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_deref().unwrap_or(T::unwritten())
    }
}

impl<T: Unwritten> std::ops::DerefMut for Written<T> {
    /// Puts the settings on the heap, if they are not yet.
    fn deref_mut(&mut self) -> &mut T {
        self.0.get_or_insert_with(Box::default)
    }
}

// Equal by what they read as: settings written, then unset again, equal
// settings never written.
impl<T: Unwritten> PartialEq for Written<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Unwritten + Eq> Eq for Written<T> {}

impl<T: Unwritten + std::fmt::Debug> std::fmt::Debug for Written<T> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, formatter)
    }
}

impl<T: Unwritten + Serialize> Serialize for Written<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CheckDefaults, Connection, ConnectionSettings, WrittenDefaults};

    #[test]
    fn written_settings_read_and_print_as_the_settings() {
        let unwritten = Connection::default();
        let mut written = Connection::from(ConnectionSettings {
            fwmark: Some(7),
            ..ConnectionSettings::default()
        });
        assert_eq!(unwritten.fwmark, None);
        assert_eq!(written.fwmark, Some(7));
        assert_ne!(unwritten, written);
        assert!(unwritten.is_empty() && !written.is_empty());
        // Written, then unset: the same as never written.
        written.fwmark = None;
        assert_eq!(unwritten, written);
        assert!(written.is_empty());
        let fields = |connection: &Connection| serde_json::to_string(connection).unwrap();
        let expected = r#"{"connect_ip":null,"connect_port":null,"bind_to":null,"bind_interface":null,"bind_port":null,"fwmark":null}"#;
        assert_eq!(fields(&unwritten), expected);
        assert_eq!(fields(&written), expected);
        written.bind_port = Some(1024);
        assert!(fields(&written).contains(r#""bind_port":1024"#));
        // Settings given whole are boxed only if something is written.
        assert!(Connection::from(ConnectionSettings::default()).0.is_none());
        let defaults = WrittenDefaults::from(CheckDefaults {
            retry: Some(3),
            ..CheckDefaults::default()
        });
        assert_eq!(defaults.retry, Some(3));
        assert_eq!(
            format!("{:?}", Connection::default()),
            format!("{:?}", ConnectionSettings::default())
        );
    }
}
