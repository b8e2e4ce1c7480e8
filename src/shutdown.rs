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

/// SIGHUP, caught from the moment this is made (so a SIGHUP during start-up, self-tests
/// included, no longer terminates the process; it is delivered once [`Hangups::on_each`] runs).
#[derive(Debug)]
pub struct Hangups(#[cfg(unix)] tokio::signal::unix::Signal);

impl Hangups {
    /// Starts catching SIGHUP. Needs a Tokio runtime.
    ///
    /// # Errors
    /// If the handler cannot be installed.
    pub fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        return Ok(Hangups(tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?));
        #[cfg(not(unix))]
        Ok(Hangups())
    }

    /// Calls `on_hangup` for each SIGHUP (one caught before this included), one at a time, on
    /// the blocking pool (reloads read files).
    pub fn on_each(self, on_hangup: impl Fn() + Send + Sync + 'static) {
        #[cfg(unix)]
        {
            let mut hangups = self.0;
            let on_hangup = std::sync::Arc::new(on_hangup);
            tokio::spawn(async move {
                while hangups.recv().await.is_some() {
                    tracing::info!("SIGHUP received: reloading callers and TLS");
                    let f = on_hangup.clone();
                    let _ = tokio::task::spawn_blocking(move || f()).await;
                }
            });
        }
        #[cfg(not(unix))]
        drop(on_hangup);
    }
}
