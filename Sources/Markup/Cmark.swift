import CCmarkGFM
import Glibc
import Synchronization

/// One Markdown text parsed by cmark-gfm: the parser (which owns the GFM extensions the
/// renderer needs) and the document tree, both freed together in `deinit`. Not shared between
/// threads: each conversion makes its own.
final class CmarkDocument {
    private let parser: OpaquePointer
    private let root: OpaquePointer

    /// The options every parse and render uses: raw HTML kept (a note body is HTML, and the
    /// issue's opaque blocks must stay verbatim), soft line breaks as spaces (the block model
    /// has no soft breaks; `HTMLBlocks.markdown` writes a paragraph on one line), invalid UTF-8
    /// replaced.
    static let options = notesd_cmark_options()

    /// The GFM extensions notesd reads: tables, strikethrough, autolinks, task lists.
    static let extensionNames = ["table", "strikethrough", "autolink", "tasklist"]

    /// cmark-gfm registers its core extensions in a process-wide list without a lock: once.
    private static let registered: Bool = {
        cmark_gfm_core_extensions_ensure_registered()
        return true
    }()

    /// cmark-gfm's inline parser keeps the characters extensions react to (`~`, `|`, …) in a
    /// process-wide table that each parse fills at its start and clears at its end, so two
    /// parses at once make each other miss strikethrough or tables: parses take turns.
    private static let parsing = Mutex(())

    init(_ markdown: String) {
        _ = Self.registered
        let parser = Self.parsing.withLock { _ in Self.parse(markdown) }
        self.parser = parser.parser
        root = parser.root
    }

    private static func parse(_ markdown: String) -> (parser: OpaquePointer, root: OpaquePointer) {
        let parser = cmark_parser_new(Self.options)!
        for name in Self.extensionNames {
            if let syntax = cmark_find_syntax_extension(name) {
                cmark_parser_attach_syntax_extension(parser, syntax)
            }
        }
        var text = markdown
        text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                cmark_parser_feed(parser, chars.baseAddress, chars.count)
            }
        }
        return (parser, cmark_parser_finish(parser)!)
    }

    deinit {
        cmark_node_free(root)
        cmark_parser_free(parser)
    }

    /// The whole document as HTML.
    var html: String { html(of: root) }

    /// The top-level blocks of the document, in order.
    var topLevelNodes: [CmarkNode] { CmarkNode(root, document: self).children }

    func html(of node: OpaquePointer) -> String {
        guard let rendered = cmark_render_html(node, Self.options, cmark_parser_get_syntax_extensions(parser)) else { return "" }
        defer { free(rendered) }
        return String(cString: rendered)
    }
}

/// A node of a `CmarkDocument`'s tree; valid while the document lives (it holds it).
struct CmarkNode {
    let pointer: OpaquePointer
    let document: CmarkDocument

    init(_ pointer: OpaquePointer, document: CmarkDocument) {
        self.pointer = pointer
        self.document = document
    }

    var children: [CmarkNode] {
        var result: [CmarkNode] = []
        var child = cmark_node_first_child(pointer)
        while let node = child {
            result.append(CmarkNode(node, document: document))
            child = cmark_node_next(node)
        }
        return result
    }

    var isList: Bool { cmark_node_get_type(pointer) == CMARK_NODE_LIST }
    var isItem: Bool { cmark_node_get_type(pointer) == CMARK_NODE_ITEM }
    /// 1-based, as the source's lines count.
    var startLine: Int { Int(cmark_node_get_start_line(pointer)) }
    var endLine: Int { Int(cmark_node_get_end_line(pointer)) }
    var html: String { document.html(of: pointer) }
}
