#ifndef NOTESD_CXML2_SHIM_H
#define NOTESD_CXML2_SHIM_H
#include <libxml/parser.h>
#include <libxml/HTMLparser.h>
#include <libxml/HTMLtree.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlIO.h>

/// Loads nothing: an .enex names an external DTD, and a hostile one may declare external
/// entities; with this loader libxml2 can fetch or read no file and no URL, whatever the
/// options say.
static xmlParserInputPtr notesd_refuse_external_entity(const char *url, const char *id, xmlParserCtxtPtr context) {
    (void)url; (void)id; (void)context;
    return NULL;
}

static inline void notesd_xml_refuse_external_entities(void) {
    xmlSetExternalEntityLoader(notesd_refuse_external_entity);
}

/// The options every .enex parse uses: no network, no DTD loaded, entities left as
/// references (never substituted), no error printing (errors are read back instead).
static inline int notesd_xml_options(void) {
    return XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
}

static inline int notesd_html_options(void) {
    return HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NOIMPLIED;
}
#endif
