/// Base32 text for ids and codes people read and type: the RFC 4648 alphabet (`A–Z`, `2–7`),
/// upper-case, no padding, plus a Luhn mod 32 check character so typos are caught.
enum Base32 {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Encodes `bytes`, most significant bit first; a final partial group is padded with zero bits.
    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0, bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int(buffer >> UInt32(bits) & 31)])
            }
        }
        if bits > 0 { out.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
        return out
    }

    /// Decodes characters already checked with `value(of:)` into `byteCount` bytes. `nil` when
    /// the length does not match or the unused trailing bits are not zero (a non-canonical form).
    static func decode(_ characters: [UInt8], byteCount: Int) -> [UInt8]? {
        guard characters.count == (byteCount * 8 + 4) / 5 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(byteCount)
        var buffer: UInt32 = 0, bits = 0
        for character in characters {
            guard let value = value(of: character) else { return nil }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }

    /// The 5-bit value of an upper-case alphabet character.
    static func value(of character: UInt8) -> Int? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): Int(character - UInt8(ascii: "A"))
        case UInt8(ascii: "2")...UInt8(ascii: "7"): Int(character - UInt8(ascii: "2")) + 26
        default: nil
        }
    }

    /// What a person typed, made comparable: spaces and dashes dropped, letters upper-cased,
    /// and the digits people type for look-alike letters mapped back (`0`→`O`, `1`→`I`,
    /// `8`→`B`), since those digits are not in the alphabet.
    static func normalize(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "-"), UInt8(ascii: "\t"): continue
            case UInt8(ascii: "a")...UInt8(ascii: "z"): out.append(byte - 32)
            case UInt8(ascii: "0"): out.append(UInt8(ascii: "O"))
            case UInt8(ascii: "1"): out.append(UInt8(ascii: "I"))
            case UInt8(ascii: "8"): out.append(UInt8(ascii: "B"))
            default: out.append(byte)
            }
        }
        return out
    }

    /// The Luhn mod 32 check character for `characters` (alphabet characters only).
    ///
    /// Luhn mod N: from the rightmost character leftwards, every other value (starting with the
    /// rightmost) is doubled and its two base-32 digits summed; the check value brings the total
    /// to a multiple of 32. It catches every single-character substitution and most swaps of
    /// two neighbouring characters.
    static func luhnCheckCharacter(for characters: some BidirectionalCollection<UInt8>) -> UInt8 {
        var sum = 0
        var doubles = true
        for character in characters.reversed() {
            guard let value = value(of: character) else { preconditionFailure("Luhn check over a non-base32 character") }
            let addend = doubles ? value * 2 : value
            sum += addend / 32 + addend % 32
            doubles.toggle()
        }
        return alphabet[(32 - sum % 32) % 32]
    }
}
