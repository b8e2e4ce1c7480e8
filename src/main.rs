//! The `drbgd` binary: parses the command line and hands over to the library.

/// mimalloc instead of glibc's malloc: a request allocates about 30 times on its way through
/// hyper, axum and the handlers, and glibc's malloc + free cost about 190 instructions a pair
/// there (benches/README.md, "allocator"). Secrets are zeroized before they are freed
/// whichever allocator holds them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    drbgd::cli::main()
}
