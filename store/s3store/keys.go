package s3store

import (
	"strings"

	"github.com/resourced/resourced/store"
)

// mark ends the scheme segment and the last path segment of every object
// key. It sorts below every byte a scheme or path may contain, so key order
// is (scheme, path) order; and no object key is the "directory" of another,
// which file-system backed servers (versitygw posix, MinIO) cannot store.
const mark = "!"

// maxKeyLen is the longest object key S3 accepts, in bytes.
const maxKeyLen = 1024

// objectKey returns the S3 key of k:
// <prefix>/<tenant>/<scheme>!/<path>!
func (s *Driver) objectKey(k store.Key) string {
	return s.tenantPrefix(k.Tenant()) + k.Scheme() + mark + "/" + k.Path() + mark
}

// tenantPrefix is the key prefix of every object of tenant. It ends with
// the delimiter, so tenant "t1" never matches the objects of "t10".
func (s *Driver) tenantPrefix(tenant string) string {
	return s.base + tenant + "/"
}

// schemePrefix is the key prefix of every object of one tenant and scheme.
func (s *Driver) schemePrefix(tenant, scheme string) string {
	return s.tenantPrefix(tenant) + scheme + mark + "/"
}

// positionKey returns a key that sorts at or before the key of every
// object of tenant strictly after pos, and after every object at or before
// pos except pos itself. List uses it as StartAfter and filters the rest.
func (s *Driver) positionKey(tenant string, pos store.Position) string {
	return s.schemePrefix(tenant, pos.Scheme) + pos.Path
}

// parseKey returns the key of an object listed under tenant's prefix, and
// false for keys this package did not write.
func (s *Driver) parseKey(tenant, objKey string) (store.Key, bool) {
	rest, ok := strings.CutPrefix(objKey, s.tenantPrefix(tenant))
	if !ok {
		return store.Key{}, false
	}
	scheme, p, ok := strings.Cut(rest, mark+"/")
	if !ok {
		return store.Key{}, false
	}
	p, ok = strings.CutSuffix(p, mark)
	if !ok {
		return store.Key{}, false
	}
	k, err := store.NewKey(tenant, scheme, p)
	if err != nil {
		return store.Key{}, false
	}
	return k, true
}

// publicDir is the key segment, below the prefix, of the public index.
// '!' is not a tenant character, so no tenant's objects live below it.
const publicDir = "!public/"

// publicPrefix is the key prefix of every marker of the public index.
func (s *Driver) publicPrefix() string {
	return s.base + publicDir
}

// markerKey returns the S3 key of k's marker in the public index:
// <prefix>/!public/<tenant>!/<scheme>!/<path>!
// The mark after the tenant does for tenants what it does for schemes:
// "t1" < "t1-x" < "t10" in key order too.
func (s *Driver) markerKey(k store.Key) string {
	return s.publicPrefix() + k.Tenant() + mark + "/" + k.Scheme() + mark + "/" + k.Path() + mark
}

// parseMarkerKey returns the key of a listed marker, and false for keys this
// package did not write.
func (s *Driver) parseMarkerKey(key string) (store.Key, bool) {
	rest, ok := strings.CutPrefix(key, s.publicPrefix())
	if !ok {
		return store.Key{}, false
	}
	tenant, rest, ok := strings.Cut(rest, mark+"/")
	if !ok {
		return store.Key{}, false
	}
	scheme, p, ok := strings.Cut(rest, mark+"/")
	if !ok {
		return store.Key{}, false
	}
	p, ok = strings.CutSuffix(p, mark)
	if !ok {
		return store.Key{}, false
	}
	k, err := store.NewKey(tenant, scheme, p)
	if err != nil {
		return store.Key{}, false
	}
	return k, true
}

// publicStartKey returns a key that sorts below the marker of every object
// strictly after pos; ListPublic uses it as StartAfter and filters the
// rest. It is pos in marker form, cut before the first byte of a part that
// a key part cannot contain (mark or below, DEL or above): a position from
// outside need not be valid, and a cut marker key still sorts below every
// marker that follows pos.
func (s *Driver) publicStartKey(pos store.PublicPosition) string {
	var b strings.Builder
	b.WriteString(s.publicPrefix())
	for n, part := range []string{pos.Tenant, pos.Scheme, pos.Path} {
		if n > 0 {
			b.WriteString("/")
		}
		for i := 0; i < len(part); i++ {
			if c := part[i]; c <= mark[0] || c >= 0x7f {
				b.WriteString(part[:i])
				return b.String()
			}
		}
		b.WriteString(part)
		b.WriteString(mark)
	}
	return b.String()
}
