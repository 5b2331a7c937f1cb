//! The pieces of speed machinery that can be switched off (`--plain`). Each piece answers exactly
//! what the plain path answers, only sooner; switched off, the request takes the plain path. The
//! switch is there for the differential tests (`tests/it/machinery.rs`: the same requests answer
//! the same with the piece on and off) and for `bench/machinery_bench.py`, which prints each
//! piece's paired on/off figure on its workload.

/// A piece of speed machinery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Piece {
    /// An MCP `tools/call` of a door question written straight from the door's answer
    /// (`mcp::direct`) instead of through rmcp.
    McpDirect,
    /// MCP tool results kept and answered again without the tool (`mcp::cache`).
    McpCache,
    /// Pages of runs written from the JSON text of every cell of the run table, made once per
    /// snapshot (`service::encode::table_json`), instead of from each page's frame.
    Cells,
    /// An answer of the answer cache sent in a compressed coding from its compressed form, made
    /// once and kept beside it (`http::transport`), instead of compressed for each request.
    Precompressed,
    /// Whole responses of the answer cache answered by entity-tag stem before routing
    /// (`http::answer::KeptResponses`), instead of through the handler and the answer cache.
    Kept,
}

impl Piece {
    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// The pieces switched off; by default none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Plain(u32);

impl Plain {
    pub fn of(pieces: &[Piece]) -> Self {
        Plain(pieces.iter().fold(0, |bits, p| bits | p.bit()))
    }

    /// Whether `piece` is at work (not switched off).
    pub fn on(self, piece: Piece) -> bool {
        self.0 & piece.bit() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_switched_off_is_off_and_the_others_on() {
        let plain = Plain::of(&[Piece::McpCache]);
        assert!(!plain.on(Piece::McpCache));
        assert!(plain.on(Piece::McpDirect));
        assert!(Plain::default().on(Piece::McpCache));
    }
}
