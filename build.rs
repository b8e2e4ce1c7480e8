//! Generates the gRPC code from proto/ with protox (a pure-Rust protobuf compiler: no protoc
//! binary needed) and keeps the descriptor set for server reflection.

use std::path::PathBuf;

use protox::prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(["drbgd/v1/randomness.proto"], ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("drbgd_descriptor.bin"), descriptors.encode_to_vec())?;
    tonic_prost_build::configure().build_server(true).build_client(true).compile_fds(descriptors)?;
    Ok(())
}
