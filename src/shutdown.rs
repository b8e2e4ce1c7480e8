//! SIGTERM and SIGINT as one future; SIGHUP as a stream of reload requests.

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

/// Listens for SIGHUP from now on (so it no longer terminates the process) and calls `on_hangup`
/// for each, on a task of its own.
///
/// # Errors
/// If the handler cannot be installed.
#[cfg(unix)]
pub fn on_hangup(on_hangup: impl Fn() + Send + 'static) -> std::io::Result<()> {
    let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            tracing::info!("SIGHUP received: reloading callers and TLS");
            on_hangup();
        }
    });
    Ok(())
}
