//! Primitive types shared by every layer: point ids, and the progress observer through which
//! long steps report to whoever shows them (the terminal implements it; the layers that do the
//! work never draw anything themselves).

use std::sync::Arc;

/// Id of a point (vector) in an engine's collection; train row numbers by default.
pub type PointId = u64;

/// What a progress task counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressUnit {
    /// Vectors, queries, points.
    Items,
    /// Bytes (downloads, hashing).
    Bytes,
    /// A wait of unknown length (index build): `total` is ignored.
    Wait,
}

/// Receives progress of long steps. Implementations must be cheap to call from worker
/// threads.
pub trait Progress: Send + Sync {
    /// Starts a task of `total` units (`None`: unknown); it ends when the handle is dropped.
    fn task(&self, label: &str, total: Option<u64>, unit: ProgressUnit) -> Box<dyn ProgressTask>;

    /// A one-line note on what is happening (a phase starting, a step's headline figures).
    fn message(&self, _text: &str) {}
}

/// One running task.
pub trait ProgressTask: Send + Sync {
    /// `done` units finished so far.
    fn set(&self, done: u64);
}

/// Shows nothing: tests, libraries, `--quiet`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

struct SilentTask;

impl ProgressTask for SilentTask {
    fn set(&self, _done: u64) {}
}

impl Progress for Silent {
    fn task(
        &self,
        _label: &str,
        _total: Option<u64>,
        _unit: ProgressUnit,
    ) -> Box<dyn ProgressTask> {
        Box::new(SilentTask)
    }
}

/// A shareable progress observer (cloneable, printable in `Debug` output of options).
#[derive(Clone)]
pub struct ProgressHandle(pub Arc<dyn Progress>);

impl ProgressHandle {
    pub fn silent() -> ProgressHandle {
        ProgressHandle(Arc::new(Silent))
    }
}

impl Default for ProgressHandle {
    fn default() -> Self {
        ProgressHandle::silent()
    }
}

impl std::fmt::Debug for ProgressHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHandle")
    }
}

impl std::ops::Deref for ProgressHandle {
    type Target = dyn Progress;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

/// The type of a vector's components: what a dataset's file holds, and what an engine stores.
///
/// In memory every vector is `f32` (`crate::vectors::Vectors`): `uint8`, `int8` and `float16`
/// components are all exact in `f32`, so holding them that way loses nothing. The type says
/// what the values are, so that an engine with a native type for them can store them as such
/// (Qdrant's `uint8` and `float16` datatypes) and a conversion can be stated in the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ElementType {
    #[default]
    Float32,
    Float16,
    Uint8,
    Int8,
}

/// Serialized by its numpy name.
impl serde::Serialize for ElementType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl ElementType {
    /// The numpy name (`float32`, `float16`, `uint8`, `int8`), as results record it.
    pub fn name(self) -> &'static str {
        match self {
            ElementType::Float32 => "float32",
            ElementType::Float16 => "float16",
            ElementType::Uint8 => "uint8",
            ElementType::Int8 => "int8",
        }
    }

    /// Bytes per component.
    pub fn bytes(self) -> usize {
        match self {
            ElementType::Float32 => 4,
            ElementType::Float16 => 2,
            ElementType::Uint8 | ElementType::Int8 => 1,
        }
    }

    /// True for the 8-bit integer types.
    pub fn is_integer(self) -> bool {
        matches!(self, ElementType::Uint8 | ElementType::Int8)
    }

    /// The inclusive range of an integer type, None for the float types.
    pub fn integer_range(self) -> Option<(f32, f32)> {
        match self {
            ElementType::Uint8 => Some((0.0, 255.0)),
            ElementType::Int8 => Some((-128.0, 127.0)),
            ElementType::Float32 | ElementType::Float16 => None,
        }
    }

    /// Whether storing values of type `self` as `stored` keeps every value exactly: always to
    /// `float32`; `uint8` and `int8` also to `float16` (integers up to 2048 are exact there).
    pub fn exact_in(self, stored: ElementType) -> bool {
        self == stored
            || stored == ElementType::Float32
            || (self.is_integer() && stored == ElementType::Float16)
    }

    /// How an engine stored a dataset of type `self` as `stored`, as the result says it:
    /// `uint8` when nothing changed, `float32 (converted from uint8)` when it did, with
    /// `, rounded` when the conversion may change values.
    pub fn stored_as(self, stored: ElementType) -> String {
        if self == stored {
            stored.name().to_string()
        } else if self.exact_in(stored) {
            format!("{} (converted from {}, exact)", stored.name(), self.name())
        } else {
            format!(
                "{} (converted from {}, rounded)",
                stored.name(),
                self.name()
            )
        }
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ElementType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "float32" | "f32" => Ok(ElementType::Float32),
            "float16" | "f16" => Ok(ElementType::Float16),
            "uint8" | "u8" => Ok(ElementType::Uint8),
            "int8" | "i8" => Ok(ElementType::Int8),
            other => Err(format!(
                "unknown element type `{other}`: expected float32, float16, uint8 or int8"
            )),
        }
    }
}
