// Hostile note bodies, as a peer or an import could send them, reduced to inert HTML.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sanitizeHTML, safeHref, snippetHTML } from '../src/sanitize.js';
import { tokenize, attributesOf } from '../src/htmlblocks.js';

/** Every tag the sanitised HTML holds, with its attributes, as a browser's tokenizer sees tags. */
function tags(html) {
  return tokenize(html).filter((t) => t.kind === 'start').map((t) => ({ name: t.name, attributes: attributesOf(html, t) }));
}

function assertInert(html) {
  for (const tag of tags(html)) {
    assert.ok(!['script', 'style', 'iframe', 'object', 'embed', 'form', 'input', 'svg', 'img', 'math', 'link', 'meta', 'base'].includes(tag.name), `${tag.name} kept in ${html}`);
    for (const a of tag.attributes) {
      assert.ok(!a.name.startsWith('on'), `handler ${a.name} kept in ${html}`);
      assert.ok(a.name !== 'style', `style kept in ${html}`);
      if (a.name === 'href') assert.ok(safeHref(a.value), `href ${a.value} kept`);
    }
  }
  assert.ok(!/<(script|iframe|svg|img|object|embed|form|style)/i.test(html), html);
}

test('a script is dropped, its code never shown as markup', () => {
  const out = sanitizeHTML('<p>hi</p><script>window.pwned = 1</script><p>there</p>');
  assert.equal(out, '<p>hi</p><p>there</p>');
});

test('an image with an onerror handler is dropped', () => {
  const out = sanitizeHTML('<p>x<img src=x onerror="window.pwned=1">y</p>');
  assert.equal(out, '<p>xy</p>');
});

test('a javascript: link loses its href and gains rel', () => {
  for (const href of ['javascript:alert(1)', ' JaVaScRiPt:alert(1)', 'java\tscript:alert(1)', 'data:text/html,<script>x</script>', 'vbscript:x']) {
    const out = sanitizeHTML(`<p><a href="${href.replaceAll('"', '&quot;')}" onclick="x()">go</a></p>`);
    assert.equal(out, '<p><a rel="noopener noreferrer">go</a></p>', href);
  }
  assert.equal(sanitizeHTML('<a href="https://example.org/a?b=1&amp;c=2" title="t">x</a>'),
    '<a href="https://example.org/a?b=1&amp;c=2" title="t" rel="noopener noreferrer">x</a>');
});

test('an svg with onload, iframes, forms and styles are dropped, text kept as text', () => {
  const hostile = [
    '<svg onload="window.pwned=1"><circle r="1"/></svg>',
    '<iframe src="https://evil.example"></iframe>',
    '<form action="https://evil.example"><input name=a><button>Send</button></form>',
    '<p style="background:url(javascript:x)" onmouseover="x()">styled</p>',
    '<style>body{display:none}</style>',
    '<object data="x.swf"></object><embed src="x">',
    '<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>',
    '<p>a <b onclick="x()">b</b> &lt;script&gt;alert(1)&lt;/script&gt;</p>',
    '<<script>script>alert(1)<</script>/script>',
    '<a href="javascript&colon;alert(1)">x</a>',
    '<p title="&quot;><script>alert(1)</script>">x</p>',
  ];
  for (const html of hostile) assertInert(sanitizeHTML(html));
  assert.equal(sanitizeHTML('<form><button>Send</button></form>'), 'Send');
  assert.equal(sanitizeHTML('<p style="color:red" class="x">styled</p>'), '<p>styled</p>');
});

test('text that looks like markup stays text', () => {
  assert.equal(sanitizeHTML('<p>1 < 2 <img</p>'), '<p>1 &lt; 2 &lt;img</p>');
});

test('the block model survives sanitising', () => {
  const html = '<h2>T</h2><p><b>b</b><strong>s</strong><i>i</i><em>e</em><s>x</s><code>c</code><br></p><ul><li data-checked="true">t</li></ul><ol start="3"><li>n</li></ol><blockquote>q</blockquote><pre>code</pre><hr>';
  assert.equal(sanitizeHTML(html), html);
});

test('search snippets escape the text and mark matches', () => {
  assert.equal(snippetHTML('a <b> \u0002quince\u0003 & more'), 'a &lt;b&gt; <mark>quince</mark> &amp; more');
});
