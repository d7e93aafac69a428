// notesd: the notes sync daemon. The shell (Sources/notesd/Shell) parses the command line,
// claims the control socket, and runs the engine (Sources/notesd/Engine) until SIGTERM.
// Synchronous on purpose, with no `await` here: see `DaemonMain` on idle wake-ups.
DaemonMain.main(startEngine: EngineDaemon.start)
