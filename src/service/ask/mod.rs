//! The service's one door for questions: what each question takes, declared once (`declare`),
//! the grammar every front end's parameters are read with (`grammar`), and the representations
//! an answer is written in (`format`).

pub mod declare;
pub mod format;
pub mod grammar;

pub use self::declare::*;
pub use self::format::Format;
pub use self::grammar::*;
