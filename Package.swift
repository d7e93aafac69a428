// swift-tools-version:6.2
// notesd — a peer-to-peer notes sync daemon. See docs/architecture.md for the layout.
import PackageDescription

let package = Package(
    name: "notesd",
    products: [
        .executable(name: "notesd", targets: ["notesd"]),
        .executable(name: "notesctl", targets: ["notesctl"]),
    ],
    targets: [
        // System C libraries, one target each (module map + shim.h).
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CSodium", path: "Sources/CSodium", pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        // No pkgConfig here: avahi-client.pc's only flag is -D_REENTRANT, which SwiftPM refuses
        // with a warning on every build; its headers are in /usr/include and the module map links it.
        .systemLibrary(name: "CAvahi", path: "Sources/CAvahi", providers: [.apt(["libavahi-client-dev"])]),
        // cmark-gfm: CommonMark plus GitHub's tables, task lists, strikethrough and autolinks.
        .systemLibrary(
            name: "CCmarkGFM", path: "Sources/CCmarkGFM", pkgConfig: "libcmark-gfm",
            providers: [.apt(["libcmark-gfm-dev", "libcmark-gfm-extensions-dev"])]),
        // libyaml: the front matter of Markdown files.
        .systemLibrary(name: "CYAML", path: "Sources/CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // libxml2: Evernote .enex exports (no network, no DTD, no entity expansion).
        .systemLibrary(name: "CXML2", path: "Sources/CXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        // libmicrohttpd (Debian's libmicrohttpd-dev): a C target, not a system library, because
        // hooks.c gives its own error answers our headers (docs/decisions.md).
        .target(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", linkerSettings: [.linkedLibrary("microhttpd")]),
        // SQLite's own VFS with each connection's log appends gathered into one write
        // (docs/decisions.md, "The log's appends gathered").
        .target(name: "CSQLiteWALBuffer", dependencies: ["CSQLite"], path: "Sources/CSQLiteWALBuffer"),

        // Pure: HTML blocks, block diff3, field rules, conflict copies. No I/O, no clocks.
        .target(name: "Merge"),
        // Markdown into note bodies (cmark-gfm, then the block splitter) and edits in Markdown.
        .target(name: "Markup", dependencies: ["Merge", "CCmarkGFM", "CYAML"]),
        // Evernote .enex exports as notes (title, tags, times, ENML body as HTML); read by notesctl import.
        .target(name: "Enex", dependencies: ["CXML2"]),
        // The control-socket message types, shared by notesd and notesctl.
        .target(name: "Control"),
        // The replica, the sans-I/O sync core, the secure channel, TCP connections.
        .target(name: "Peer", dependencies: ["Merge", "CSQLite", "CSQLiteWALBuffer", "CSodium"]),
        // The local web API (docs/web.md): the pure request handling (HTTP/) and the
        // libmicrohttpd server, sessions and event streams around it (Server/).
        .target(name: "Web", dependencies: ["Control", "CMicroHTTPD", "CSodium"]),
        // Avahi publish/browse/resolve and static peers behind one protocol.
        .target(name: "Discovery", dependencies: ["CAvahi"]),

        // The daemon's engine without I/O: a state machine the daemon and the simulation drive.
        .target(name: "Engine", dependencies: ["Peer", "Merge", "Control", "Markup"]),

        .executableTarget(name: "notesd", dependencies: ["Engine", "Peer", "Discovery", "Control", "Web"]),
        .executableTarget(name: "notesctl", dependencies: ["Control", "Enex"]),
        // Benchmarks: release build, prints figures; never part of the tests.
        .executableTarget(name: "notes-bench", dependencies: ["Merge", "Peer", "Control", "Markup"]),
        // Child processes for the crash and process-level tests; not installed.
        .executableTarget(name: "notes-testkit", dependencies: ["Merge", "Peer"]),
        // Test tool: runs AvahiDiscovery inside a netlab namespace and prints its events as JSON.
        .executableTarget(name: "discovery-probe", dependencies: ["Discovery"]),

        // Helpers shared by the test targets (child processes, temporary directories).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // Real EngineCores on an in-memory network in virtual time, for the engine tests and the simulation.
        .target(name: "EngineHarness", dependencies: ["Engine", "Peer", "Merge", "Control"], path: "Tests/EngineHarness"),

        .testTarget(name: "MergeTests", dependencies: ["Merge", "TestSupport"]),
        .testTarget(name: "MarkupTests", dependencies: ["Markup", "Merge", "Enex", "TestSupport"], exclude: ["Samples"]),
        .testTarget(name: "ControlTests", dependencies: ["Control", "notesctl", "TestSupport"]),
        .testTarget(name: "PeerTests", dependencies: ["Peer", "Merge", "CSodium", "CSQLite", "TestSupport", "notes-testkit"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery", "Merge", "TestSupport"]),
        // The daemon: process shell, control server, engine (test targets may use executables).
        .testTarget(name: "NotesdTests", dependencies: ["notesd", "Engine", "EngineHarness", "Control", "Peer", "Merge", "TestSupport"]),
        // Real notesd processes on loopback, driven only through notesctl.
        .testTarget(name: "EndToEndTests", dependencies: ["notesd", "notesctl", "Control", "TestSupport"]),
        // The web API (docs/web.md): the pure router, and real notesd processes over HTTP.
        .testTarget(name: "WebTests", dependencies: ["Web", "Control", "notesd", "notesctl", "TestSupport"]),
        // The real LAN (docs/testing.md): notesd in netlab namespaces with their own Avahi; root only.
        .testTarget(name: "LANTests", dependencies: ["notesd", "notesctl", "Control", "TestSupport"]),
        // The deterministic fault simulation (docs/testing.md): many replicas, one seed.
        .testTarget(name: "SimulationTests", dependencies: ["Engine", "EngineHarness", "Peer", "Merge", "Control", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
