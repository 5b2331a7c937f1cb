//! The binary: everything it runs is `config::entry::main` in the library.

fn main() -> std::process::ExitCode {
    mlenergy_server::config::entry::main()
}
