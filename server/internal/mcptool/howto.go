package mcptool

import "strconv"

// HowToRead is the sentence, in plain words, that a result carrying the
// resource_link of uri adds to its value (field howToRead, so it is in the
// JSON text and in structuredContent alike): read it with resources/read,
// or, on a host that cannot read resources, with the read_resource tool and
// a window; and, when the caller asked for a signed link (downloadExpiresAt
// set), with an HTTP GET of downloadUrl until it expires. Some hosts show a
// link as bare JSON or as "[Resource link: name] uri" and fetch nothing;
// the sentence tells the model what to do instead.
func HowToRead(uri, downloadExpiresAt string) string {
	q := strconv.Quote(uri)
	s := "To read this resource, call resources/read with the URI " + uri + ". " +
		"If you cannot read resources, call the read_resource tool with {\"uri\": " + q + "}: " +
		"it returns the body one window at a time; ask for the next window with offset set to nextOffset (or startLine set to nextLine) until neither is returned."
	if downloadExpiresAt != "" {
		s += " You can also download the raw body with a plain HTTP GET of downloadUrl, without a token, until " + downloadExpiresAt +
			"; after that, or if the resource changes, ask for a new link."
	}
	return s
}

// HowToReadEach is HowToRead for a result with several resource_links
// (list_resources): one sentence for all of them.
func HowToReadEach() string {
	return "To read any resource of this result, call resources/read with its URI. " +
		"If you cannot read resources, call the read_resource tool with {\"uri\": <its URI>}: " +
		"it returns the body one window at a time; ask for the next window with offset set to nextOffset (or startLine set to nextLine) until neither is returned."
}
