import Foundation

// notesctl: parse (pure), then run against the daemon (Runner). Exit codes: ExitStatus.
switch CommandParser.parse(Array(CommandLine.arguments.dropFirst())) {
case .success(let invocation):
    let status = Runner(options: invocation.options).run(invocation.command)
    Output.flush()
    exit(status.rawValue)
case .failure(let error):
    Output.error(error.message)
    FileHandle.standardError.write(Data((error.usage + "\n").utf8))
    exit(ExitStatus.usage.rawValue)
}
