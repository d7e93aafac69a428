/// The release of notesd and notesctl, shown by `--version`.
public enum NotesVersion {
    public static let string = "0.1.0"
}
