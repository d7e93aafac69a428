// notesd: the notes sync daemon. The shell (Sources/notesd/Shell) parses the command line,
// claims the control socket, and runs the engine (Sources/notesd/Engine) until SIGTERM.
await DaemonMain.main(startEngine: { startup in try await EngineDaemon.start(startup) })
