// Text in and out of HTML, by the same rules notesd uses (docs/merge.md, "Text").

/** The named entities notesd decodes (the ones editors and people write); any other stays as written. */
const NAMED = {
  amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: "\u{A0}", AMP: "&", LT: "<", GT: ">",
  QUOT: "\"", copy: "©", reg: "®", trade: "™", hellip: "…", mdash: "—", ndash: "–", lsquo: "‘",
  rsquo: "’", sbquo: "‚", ldquo: "“", rdquo: "”", bdquo: "„", laquo: "«", raquo: "»", lsaquo: "‹",
  rsaquo: "›", bull: "•", middot: "·", deg: "°", plusmn: "±", times: "×", divide: "÷", minus: "−",
  ne: "≠", le: "≤", ge: "≥", asymp: "≈", infin: "∞", frac12: "½", frac14: "¼", frac34: "¾",
  sup1: "¹", sup2: "²", sup3: "³", micro: "µ", para: "¶", sect: "§", euro: "€", pound: "£",
  yen: "¥", cent: "¢", curren: "¤", dagger: "†", Dagger: "‡", permil: "‰", prime: "′", Prime: "″",
  larr: "←", rarr: "→", uarr: "↑", darr: "↓", harr: "↔", lArr: "⇐", rArr: "⇒", hArr: "⇔",
  check: "✓", cross: "✗", star: "☆", starf: "★", shy: "\u{AD}", zwj: "\u{200D}", zwnj: "\u{200C}",
  lrm: "\u{200E}", rlm: "\u{200F}", ensp: "\u{2002}", emsp: "\u{2003}", thinsp: "\u{2009}",
  iexcl: "¡", iquest: "¿", Agrave: "À", Aacute: "Á", Acirc: "Â", Atilde: "Ã", Auml: "Ä",
  Aring: "Å", AElig: "Æ", Ccedil: "Ç", Egrave: "È", Eacute: "É", Ecirc: "Ê", Euml: "Ë",
  Igrave: "Ì", Iacute: "Í", Icirc: "Î", Iuml: "Ï", Ntilde: "Ñ", Ograve: "Ò", Oacute: "Ó",
  Ocirc: "Ô", Otilde: "Õ", Ouml: "Ö", Oslash: "Ø", Ugrave: "Ù", Uacute: "Ú", Ucirc: "Û", Uuml: "Ü",
  Yacute: "Ý", szlig: "ß", agrave: "à", aacute: "á", acirc: "â", atilde: "ã", auml: "ä",
  aring: "å", aelig: "æ", ccedil: "ç", egrave: "è", eacute: "é", ecirc: "ê", euml: "ë",
  igrave: "ì", iacute: "í", icirc: "î", iuml: "ï", ntilde: "ñ", ograve: "ò", oacute: "ó",
  ocirc: "ô", otilde: "õ", ouml: "ö", oslash: "ø", ugrave: "ù", uacute: "ú", ucirc: "û", uuml: "ü",
  yacute: "ý", yuml: "ÿ", OElig: "Œ", oelig: "œ", Scaron: "Š", scaron: "š", Alpha: "Α", Beta: "Β",
  Gamma: "Γ", Delta: "Δ", alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", lambda: "λ",
  mu: "μ", pi: "π", sigma: "σ", tau: "τ", phi: "φ", omega: "ω", Omega: "Ω", Sigma: "Σ", Pi: "Π",
  sum: "∑", prod: "∏", radic: "√", part: "∂", forall: "∀", exist: "∃", empty: "∅", isin: "∈",
  notin: "∉", and: "∧", or: "∨", cap: "∩", cup: "∪", int: "∫", there4: "∴", sim: "∼", equiv: "≡",
  sub: "⊂", sup: "⊃", oplus: "⊕", otimes: "⊗", loz: "◊", spades: "♠", clubs: "♣", hearts: "♥",
  diams: "♦", ordf: "ª", ordm: "º", not: "¬", macr: "¯", acute: "´", cedil: "¸", uml: "¨",
  brvbar: "¦",
};

/** `text` with `&name;`, `&#123;` and `&#x1F600;` decoded; the semicolon is required. */
export function decodeEntities(text) {
  if (!text.includes('&')) return text;
  return text.replace(/&(#[xX][0-9A-Fa-f]{1,8}|#[0-9]{1,8}|[A-Za-z0-9]{1,32});/g, (whole, name) => {
    if (name[0] === '#') {
      const value = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      if (value === 0 || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return '\uFFFD';
      return String.fromCodePoint(value);
    }
    return Object.prototype.hasOwnProperty.call(NAMED, name) ? NAMED[name] : whole;
  });
}

/** `text` as HTML text: `&`, `<` and `>` escaped. */
export function escapeText(text) {
  return text.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

/** A value for a double-quoted attribute: `&` and `"` escaped. */
export function escapeAttribute(value) {
  return value.replace(/[&"]/g, (c) => (c === '&' ? '&amp;' : '&quot;'));
}
