//! SIGTERM and SIGINT as one future.

/// Completes on the first SIGTERM or SIGINT (Ctrl-C).
///
/// # Panics
/// If the signal handlers cannot be installed (at start-up, before serving).
pub async fn signal() {
    let ctrl_c = async {
        tokio::signal::ctrl_c().await.expect("install SIGINT handler");
    };
    #[cfg(unix)]
    let term = async {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install SIGTERM handler")
            .recv()
            .await;
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT received"),
        () = term => tracing::info!("SIGTERM received"),
    }
}
