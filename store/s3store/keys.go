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
func (s *Store) objectKey(k store.Key) string {
	return s.tenantPrefix(k.Tenant()) + k.Scheme() + mark + "/" + k.Path() + mark
}

// tenantPrefix is the key prefix of every object of tenant. It ends with
// the delimiter, so tenant "t1" never matches the objects of "t10".
func (s *Store) tenantPrefix(tenant string) string {
	return s.base + tenant + "/"
}

// schemePrefix is the key prefix of every object of one tenant and scheme.
func (s *Store) schemePrefix(tenant, scheme string) string {
	return s.tenantPrefix(tenant) + scheme + mark + "/"
}

// positionKey returns a key that sorts at or before the key of every
// object of tenant strictly after pos, and after every object at or before
// pos except pos itself. List uses it as StartAfter and filters the rest.
func (s *Store) positionKey(tenant string, pos store.Position) string {
	return s.schemePrefix(tenant, pos.Scheme) + pos.Path
}

// parseKey returns the key of an object listed under tenant's prefix, and
// false for keys this package did not write.
func (s *Store) parseKey(tenant, objKey string) (store.Key, bool) {
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
