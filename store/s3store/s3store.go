// Package s3store owns the S3 store.Driver: every object is one S3 object
// in one bucket, written with conditional requests so that create-only and
// hash-bound replaces hold across processes, and read back with the same
// semantics as the bbolt backend (proven by store/storetest). Open returns
// Store, the portable store.Bucket over the Driver (which validates input,
// hashes, normalises times, hides expired objects from point reads and
// passes its clock to every call here that judges expiry) with the
// driver's streaming; S3 objects keep no encoded form (KeepsEncoded is
// false). Get below means the Driver's Read, on which the
// Bucket builds Get.
//
// # Layout
//
// The object of key scheme://tenant/path lives at
//
//	<prefix>/<tenant>/<scheme>!/<path>!      e.g. "prod/t1/report!/2026/q1/summary!"
//
// Every prefix this package lists ends with the delimiter, so tenant "t1"
// never matches the objects of "t10" or "t1-x". The "!" after the scheme
// and after the last path segment sorts below every byte a scheme or path
// may contain ('+', '-', '.', '/', ...). It has two jobs:
//   - plain S3 key order is then (scheme, path) order, which List needs:
//     without it "a+b/x" would sort before "a/x" although scheme "a" comes
//     first;
//   - no object key is the "directory" of another ("a/x!" and "a/x/y!"),
//     which servers backed by a file system (versitygw posix, MinIO) cannot
//     store side by side.
//
// The public index (below) keeps one empty marker object per public listed
// object at
//
//	<prefix>/!public/<tenant>!/<scheme>!/<path>!   e.g. "prod/!public/t1!/report!/2026/q1/summary!"
//
// No tenant is "!public" ('!' is not a tenant character), so no tenant
// prefix covers a marker. The "!" after the tenant does for tenants what
// the one after the scheme does for schemes: marker key order is
// (tenant, scheme, path) order, "t1" < "t1-x" < "t10", which "/" alone
// would not give ("t1-x/" < "t1/").
//
// S3 keys are at most 1024 bytes, and versitygw's posix backend allows 255
// bytes per path segment. store.MaxPathLen is larger: a Put whose key, or
// the key of its marker (9 bytes longer), does not fit fails with
// ErrInvalidKey; Get, Stat and Delete of such a key report ErrNotFound,
// since it cannot have been stored.
//
// # Objects
//
// An object's content is a record, the body behind a small header:
//
//	+-----------------+------------------+--------------+--------------+
//	| "rsd" version 1 | uvarint metaLen  | metadata     | body         |
//	| 4 bytes         | 1..10 bytes      | metaLen      | the rest     |
//	+-----------------+------------------+--------------+--------------+
//
// The metadata is boltstore's encoding plus a write id: a flags byte (bit
// 0: Listed); varints Size, Created, Modified and Expires (Unix
// milliseconds; the zero time is its own UnixMilli); uvarint-length strings
// MIMEType, SHA256, Title, Description, Visibility and the write id. Keeping
// the metadata inside the content, not in S3 user metadata, means:
//   - no size limit beyond the object's (AWS and versitygw cap user
//     metadata at 2 KiB, while a description may be 4096 characters of
//     UTF-8), and no encoding of non-ASCII titles;
//   - metadata and body are published in one PUT and read in one GET, so a
//     reader never pairs the metadata of one write with the body of
//     another (versitygw's sidecar mode stores user metadata apart from the
//     data, not atomically with it).
//
// For operators, each PUT also sets the S3 user metadata sha256, write-id
// and, when the object expires, expires-at (RFC 3339, UTC). They are
// informational: this package never reads them.
//
// Get reads the whole object and checks the body against its size and
// SHA-256. Stat and every precondition read only the header: a ranged GET
// of the first 4 KiB, and a second one (bound to the first's ETag) in the
// rare case the header is longer. Times are kept to the millisecond, in
// UTC (the Bucket hands them over so).
//
// # Preconditions
//
// S3 conditions compare ETags; store conditions compare SHA-256 hashes. A
// conditional write therefore reads the current header (hash, expiry,
// Created and ETag), decides, and then writes with If-Match: <that ETag>,
// so that a change in between fails the write (412) instead of being lost:
//   - IfNone writes with If-None-Match: *. On 412 it reads the object: a
//     live one fails with ErrPreconditionFailed; an expired one, which still
//     occupies the key, is replaced with If-Match on its ETag.
//   - IfMatch needs a live object with the wanted hash, keeps its Created
//     and writes with If-Match on its ETag.
//   - Always keeps the Created of a live object the same way (If-Match, or
//     If-None-Match when there is none); after four conflicting attempts it
//     writes unconditionally, so it never fails for contention, and only
//     then may a concurrent write make Created or replaced stale.
//
// A 412 (or 409 ConditionalRequestConflict, or 404 on If-Match) is not
// final: the SDK retries a PUT whose response was lost, and that retry
// fails against our own first attempt. Every Put carries a random write id
// in its record; after a conflict the object is read again, and if it holds
// our write id, the write is ours and Put succeeds with what is stored. An
// identical body written by another Put has another write id and still
// counts as a conflict. When the object changed for other reasons the
// decision is taken again, at most four times. But when the SDK did retry
// the PUT (countAttempts sees every HTTP attempt) and the object holds
// another write id, the first attempt may have landed and been replaced
// since (another caller's If-Match bound to it): Put then fails with
// store.ErrUnknownOutcome, neither a conflict nor a success, and does not
// write again (an Always that wrote again would show its body, another,
// then its body once more).
//
// The read and the conditional write are only as atomic as the server's
// publication of an object: on AWS, and on versitygw storing metadata in
// xattrs, the ETag and the content change together. versitygw's --sidecar
// mode stores the new ETag before it links the new data, so for a moment a
// reader may pair the old header with the new ETag; a replace bound to the
// old hash can then overwrite that newer write. Use xattr mode; Probe
// finds the sidecar pairing (read-atomic), and resourced refuses it.
//
// Delete reads the header, checks expiry and the hash, and replaces the
// object with a tombstone: a record with no body whose expiry is 1970
// (tombstoneExpires), so that every process and every older version of
// this package takes it for an expired object, written with a PUT bound by
// If-Match to the ETag it read and carrying a write id like any Put. A 412
// means the object changed: the decision is taken again (a tombstone there
// now is an object gone: ErrNotFound), and a retried tombstone PUT is
// judged by its write id as above, ErrUnknownOutcome included. After four
// attempts an unconditional Delete fails with a backend error (nothing
// changed), not a precondition failure. Creates replace a tombstone like
// any expired object, and DeleteExpired removes it later.
//
// Delete does not send DELETE: on versitygw v1.8.0 a DELETE cannot be a
// linearizable delete. It answers 204 for a missing key even with If-Match,
// so two Deletes that read the object both answer deleted; and it compares
// If-Match outside the lock its PUTs publish under, then removes the file,
// so a DELETE bound to E1 removes the object a concurrent PUT bound to E1
// has just published, and both succeed (TestServerDeleteIfMatchIsAtomic
// shows it with the raw client, no s3store logic). A tombstone PUT is
// checked under that lock like every conditional PUT. The cost: a deleted
// key keeps a header-only object until DeleteExpired reaches it, and List
// reads its header meanwhile.
//
// # Listing
//
// List pages through ListObjectsV2 under the tenant prefix (or the scheme
// prefix plus the path prefix), starting after the cursor's key, and reads
// the header of each candidate (ListObjectsV2 returns no metadata) to drop
// expired and, for ListedOnly, unlisted objects. A page of n items costs
// about n+1 header reads plus one ListObjectsV2 call per 1000 keys
// examined; the reads run 8 at a time. Expired objects still stored cost a
// read each until something removes them. Once a prefix's ListObjectsV2
// misses the call deadline (a service that reads a directory of a million
// files per call), the pages of that prefix fail at once for 30 s instead
// of each waiting the whole deadline (slowlist.go).
//
// ListPublic pages through ListObjectsV2 under the index prefix, starting
// after the cursor's marker key, and reads the header of each marker's
// object the same way, 8 at a time: a page of n items costs about n+1
// header reads plus one ListObjectsV2 call per 1000 markers examined, and
// one more read per stale marker it meets (next section).
//
// # Public index
//
// S3 cannot write two objects atomically, so the index is kept beside the
// objects, not with them, and is only a hint: ListPublic shows an object
// only after reading its header and finding it live, public and listed. A
// stale marker therefore never shows an object; a missing marker hides a
// public one. The writes are ordered so that markers are missing only
// after a failure:
//   - Put writes the object first. Then, if the stored object is public
//     and listed, it writes the marker; otherwise, if the object it
//     replaced may have had one (it was public and listed, or is unknown
//     because the write was unconditional or a retried request of ours),
//     it removes the marker. A Put over an expired object follows the new
//     object like any other.
//   - Delete deletes the object, then, if it was public and listed,
//     removes the marker.
//   - Removing a marker is a DELETE followed by a new read of the object's
//     header; if that finds the object live, public and listed (a
//     concurrent Put has just published it), or cannot tell, the marker is
//     written again. So whatever the interleaving of concurrent writers,
//     the last marker request after the last write of a public listed
//     object is a PUT. Removal is not stopped by a canceled caller context
//     once it has begun.
//   - ListPublic removes, the same way and best effort, the stale markers
//     it meets: objects gone, private, unlisted or expired. The one a
//     private Put leaves when a concurrent public Put wrote its marker
//     late is among them.
//
// The non-atomic part shows in two ways. Between the object write and the
// marker write, a Put of a public object is readable by Get but not yet in
// ListPublic (and a crash there leaves it out until it is written again).
// And a Put or Delete whose object change succeeded but whose marker write
// failed returns an error although the object change stands; retrying a
// Put with Always repairs the index. Expiry is judged by each process's
// clock: a process whose clock runs ahead may remove the marker of an
// object that another still considers live.
//
// # Expiry
//
// An expired object stays in the bucket, invisible, until a Put replaces
// it or DeleteExpired removes it. S3 has no index by expiry, so
// DeleteExpired lists object keys (ListObjectsV2, which returns no
// metadata) and reads the header of each (a ranged GET), 8 at a time,
// continuing from where the previous call of this Store stopped and
// starting over at the end of the bucket. One call examines at most
// maxSweepScan×limit objects and removes at most limit, each with a DELETE
// bound by If-Match to the ETag of the header it read, so an object a
// concurrent Put replaced survives (on AWS; on versitygw v1.8.0 a Put
// landing in the same moment can still be removed, see Delete), and then
// removes its marker if it had one. Tombstones are among the objects it
// removes (and counts). A full pass over a bucket of n
// objects therefore costs about n header reads and n/1000 list calls,
// whether or not anything has expired, spread over at least
// n/(maxSweepScan×limit) calls; run it at a pace that suits the bucket.
// The position is kept in memory: a restarted process starts over, and
// several processes sweep independently (their deletes are conditional, so
// that only wastes requests). Calls of one Store run one at a time.
//
// Bucket lifecycle rules are a complement, not a replacement: they expire
// objects by age, prefix or tag, not by the expiry in our record, and they
// leave public index markers behind (ListPublic removes those as stale).
// Where every object under a prefix has a bounded lifetime, an expiration
// rule a little longer than that lifetime reclaims space without reads;
// DeleteExpired still removes objects on time.
//
// # Quotas
//
// Each tenant's usage lives in one small JSON object beside its objects,
//
//	<prefix>/!usage/<tenant>                 e.g. "prod/!usage/t1"
//
// ('!' is not a tenant character, and "!usage/" sorts before where
// DeleteExpired starts). It holds the committed usage and the writes in
// progress, each a reservation with an id, its signed delta (bytes and
// objects) and the time it was made. The id is the first 16 hex digits of
// the write id the write's record carries (see "Objects"), so that a
// reconcile can tell which pending writes it has counted. Every change
// is a read, a change and a PUT bound by If-Match to the ETag read
// (If-None-Match: * for the first), retried on 412; every change is idempotent, so that a PUT the
// SDK retried and that then failed its condition can be applied again
// (commits remember their last ids for that).
//
// Every write that changes usage (Put, PutStream, Delete, and each
// non-tombstone object DeleteExpired removes) does, around its object
// write:
//  1. reserve: once it knows what its PUT replaces (the object bound by
//     If-Match, nothing for If-None-Match, and for an unconditional PUT
//     nothing, an upper bound), it records its delta as a reservation,
//     after checking Cond.Quota against the committed usage plus the
//     positive part of every reservation plus its own delta. Over the
//     quota it fails with store.ErrQuotaExceeded and writes nothing (a
//     create first reads the object, so that a failed precondition is
//     reported as such). A retry of the object write (a 412) updates the
//     reservation.
//  2. write the object (or the tombstone, or the DELETE).
//  3. commit: the reservation's delta moves to the committed usage; or,
//     when the write failed, release: the reservation is removed, unless
//     the write may have landed (no answer, or an SDK retry), in which
//     case it stays, an over-count until the reconciler drops it. A
//     commit of a write that only adds (a create, a replace by a larger
//     body) changes nothing anyone reads: the total already counted the
//     reservation's positive part. So the write does not wait for it; it
//     is queued and goes out with the tenant's next usage PUT (typically
//     the next save's reserve), and Close waits for it. A commit that
//     lowers usage (a shrink, a delete) and a release are waited for.
//
// Usage, and every quota check, is committed plus the positive parts of
// the reservations: a write in progress counts from before it writes to
// after it commits, a shrink or a delete only once it has committed. So a
// crash anywhere leaves an over-count, never an under-count, and two
// processes racing for the last bytes of a quota cannot both get them:
// the second reservation's PUT fails its If-Match and is checked again.
// Commits and releases run to the end whatever the caller's context, and
// their failure is not reported (an over-count).
//
// Cost. A write makes up to two more requests than without quotas, both
// PUTs of the usage object (about 200 bytes plus 40 per write in
// progress): the reserve before its object PUT, in series with it, and
// the commit after. A save that adds waits for the reserve only (one more
// S3 round trip, plus the usage PUT in flight it queues behind); a shrink
// or delete waits for both. The usage object is read only
// when it changed under us: a process caches it with its ETag. All the
// updates of one tenant in one process go out batched: while one usage
// PUT is in flight, the others queue and leave together in the next one,
// so one process sends at most one usage PUT at a time per tenant,
// whatever its concurrency, and a tenant's save rate in one process is
// bounded by the batch size over the PUT's latency, not by one save per
// round trip. Across processes the usage object of a busy tenant is the
// point of contention: each process's PUT that loses a race costs a GET
// and another PUT (retried up to 64 times, with a random pause). Writes of
// different tenants never contend. The cost is paid whether or not a quota
// is configured, so that Usage is always right and a quota can be
// turned on at any time.
//
// Reconcile (Driver.Reconcile, Store.Reconcile, ReconcileAll, and
// `resourced reconcile`) recounts a tenant from a listing (a LIST per 1000
// keys and a header read per object, 8 at a time) and corrects drift: an
// over-count left by a crash, or an object changed by something else than
// this package. Concurrent writes are not lost:
//  1. it opens an epoch in the usage object; from then on every commit
//     also adds the positive part of its delta to the epoch's growth;
//  2. it counts the tenant's objects (expired ones count, tombstones do
//     not);
//  3. it sets committed = count + growth, keeps every reservation still
//     pending but marks it as straddling the count, and closes the epoch
//     (in one conditional PUT; if another reconcile opened an epoch
//     since, this one gives up and the other one wins).
//
// The count notes the write ids of the objects and tombstones it read
// that changed in the last 16 minutes. A pending write whose id it saw is
// in the count: its reservation is marked counted (it counts nothing more,
// and its commit only removes it), which also corrects at once a writer
// that died after its object landed. A commit during the count is named
// in the usage object (the first 128 of an epoch) with its growth, and
// the growth of those whose object the count saw is not added again.
// Otherwise, a write that committed during the count may or may not be
// in the count: adding its growth can only over-count (by what it added,
// if the count saw it), and its shrinking is ignored (an over-count, if
// the count did not see the object shrink). A write still pending may or
// may not have landed before the count saw its key: a straddling
// reservation therefore commits only its positive part. Reservations older than 15 minutes when
// the reconcile began are dropped: their writer died, since a writer
// abandons a reservation older than half of that before it writes. (Clocks
// of the processes must agree to well within that, as expiry already
// needs.) So a reconcile in a quiet moment gives the true sum, plus the
// reservations of writes that may have landed (step 3 of the write) whose
// object the count did not see: such a PUT may still reach S3 after the
// count (its request sent, its answer lost), so its reservation counts
// until it is dropped at 15 minutes. One during writes over-counts at most
// by what those writes changed; the next reconcile corrects that.
//
// A tenant with no usage object yet (a bucket written by an older
// version, or a new tenant) gets one from a reconcile at its first write;
// while that first count runs, writes with a quota wait for it (and take
// it over if it makes no progress for two minutes), and Usage counts from
// the listing itself. A bucket written by an older version while this
// version ran must be reconciled once (`resourced reconcile`).
//
// # Streaming
//
// PutStream (StreamDriver, stream.go) spools the body to an unlinked
// temporary file (Options.SpoolDir) while it computes the size and
// SHA-256, builds the header, and sends header and file as the body of the
// same conditional single PUT that Put uses, with a Content-Length, read
// from the file (once for the Content-MD5, once for the SigV4 payload hash
// on plain-HTTP endpoints, once to send, and again on an SDK retry): memory
// holds buffers only. A single PUT carries up to 5 GiB; multipart uploads
// are not used, because the conditional headers the preconditions rely on
// are not honoured on CompleteMultipartUpload by every S3-compatible
// server. Put sends its []byte body the same way, without copying it.
//
// Open reads the header (a ranged GET), then each Read streams the body
// with a ranged GET bound by If-Match to the header's ETag, so a replaced
// or deleted object fails the read instead of mixing two bodies; a Seek
// only moves the position, and the next Read starts a new GET there. The
// call deadline applies to each GET until its response arrives and to each
// Read of the body (not to the time between Reads, which a slow client
// controls); a body read that fails is resumed once with a new ranged GET
// at the same position. No presigned URL is ever handed out: an object
// holds the record header before the body, and a presigned URL would serve
// both, and bypass expiry and visibility. (The driver presigns the URLs of
// its own read GETs, below, and keeps them to itself.)
//
// # Probe and single-writer mode
//
// All of the above is only as safe as the service's conditional requests
// and its publication of an object. Probe (probe.go) checks each property
// this doc relies on (Guarantees), with the raw client under a private
// <prefix>/!probe/<random>/ that it removes again, in well under a
// second; resourced runs it before every s3 start and refuses a service
// that fails one, and `resourced s3 check` runs it for operators
// (docs/s3.md has the results per service). Options.SingleWriter (the
// config's store.s3.unsafeAllowSingleWriter) is for such a service, with
// one instance: writes need the lease <prefix>/!lease that HoldLease
// takes, the writes of one key are serialised in the process, and there
// is no read cache (lease.go).
//
// # Calls
//
// Every S3 call runs under its own deadline, Options.CallTimeout (10 s by
// default), including the SDK's retries (and the read GET's own). A call that hits it fails with a
// backend error; a canceled or expired caller context gives an error that
// wraps ctx.Err(). Every call sends checksums only where S3 requires them
// (S3-compatible servers reject the newer default trailers) and a
// Content-MD5 on every PUT instead; these settings are applied per call
// (callOptions), whatever client Open was given.
//
// The one GET of a Read (and of ReadGated) is not the SDK's GetObject but
// a plain net/http GET of a presigned URL kept per object key, sent by the
// client's own HTTP client, with its own bounded retries (fastget.go): the
// SDK's per-call middleware and signing were most of a small read's cost.
// Every other call goes through the SDK.
//
// The package does not build its S3 client: Open takes a ready *s3.Client
// (region, endpoint, addressing and credentials are the caller's;
// cmd/resourced builds it from the standard AWS chain). No error text of
// this package carries credentials.
package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/maphash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/resourced/resourced/store"
)

// DefaultCallTimeout is the CallTimeout of a zero Options.
const DefaultCallTimeout = 10 * time.Second

// DefaultReadCache is the read cache budget resourced configures when
// store.s3.readCache is unset (a zero Options.ReadCache is no cache).
const DefaultReadCache = 64 << 20

const (
	// headProbe is how many bytes a header read fetches first.
	headProbe = 4096
	// listConcurrency bounds the header reads List runs at once.
	listConcurrency = 8
	// maxAttempts bounds the read-decide-write rounds of one Put or
	// Delete when the object keeps changing under it.
	maxAttempts = 4
	// contentType is the Content-Type of every object: a record, not the
	// body's own type (that is in the record).
	contentType = "application/octet-stream"
)

// Options configures Open.
type Options struct {
	// Bucket holds the objects; required. It must exist (Ping checks it).
	Bucket string
	// Prefix is prepended to every key, followed by "/"; empty means the
	// bucket root. It is "/"-separated segments with no leading, trailing
	// or double "/" ("resourced/prod", not "resourced/prod/"): one spelling
	// per prefix, so two instances cannot name one place differently.
	Prefix string
	// CallTimeout bounds every S3 call, retries included. Zero means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// Now is the clock used for expiry (the Bucket's, passed to the
	// Driver on every call); nil means time.Now.
	Now func() time.Time
	// SpoolDir holds the temporary files of PutStream (unlinked at once);
	// "" means os.TempDir().
	SpoolDir string
	// ReadCache is the byte budget of the read cache (cache.go): objects
	// read recently are kept, and a later Get asks S3 only whether they
	// changed. Zero: no cache. Objects over an eighth of it are not cached.
	ReadCache int64
	// SingleWriter is for an S3 service that fails the probe (Probe):
	// writes need the lease HoldLease takes, so that no other process
	// writes, the writes of one key are serialised, and there is no read
	// cache (lease.go).
	SingleWriter bool
}

// Validate reports every problem of o, each naming its key below
// store.s3 in resourced's configuration (e.g. "prefix: ..."); callers add
// the path ("store.s3.prefix: ..."). It is fast and pure: it does not
// contact S3.
func (o Options) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if o.Bucket == "" {
		bad("bucket", "required")
	} else if !validBucket(o.Bucket) {
		bad("bucket", "%q is not a bucket name (3 to 255 of a-z, A-Z, 0-9, '.', '_', '-', starting and ending with a letter or digit)", o.Bucket)
	}
	if msg := checkPrefix(o.Prefix); msg != "" {
		bad("prefix", "%s", msg)
	}
	if o.ReadCache < 0 {
		bad("readCache", "must not be negative")
	}
	if o.CallTimeout < 0 {
		bad("callTimeout", "must not be negative")
	}
	return errors.Join(errs...)
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 255 || !alnum(b[0]) || !alnum(b[len(b)-1]) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if c := b[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// checkPrefix returns what is wrong with a key prefix, or "".
func checkPrefix(p string) string {
	if p == "" {
		return ""
	}
	if len(p) > 512 {
		return "longer than 512 bytes"
	}
	if strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Sprintf("%q: no leading or trailing '/' (write e.g. \"resourced/prod\")", p)
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Sprintf("%q has an empty, '.' or '..' segment", p)
		}
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return fmt.Sprintf("%q: byte %#x is not allowed (printable ASCII but '\\' only)", p, c)
		}
	}
	return ""
}

// Driver is the store.Driver (and store.StreamDriver) on one S3 bucket,
// safe for concurrent use. Open wraps it in the portable store;
// OpenDriver returns it alone, for storetest.
type Driver struct {
	client  *s3.Client
	bucket  string
	base    string // Prefix + "/", or ""
	timeout time.Duration
	closed  atomic.Bool
	spool   string     // PutStream's temporary files; "" is os.TempDir()
	cache   *readCache // nil: off
	getter  *getter    // the GETs of reads (fastget.go)
	putter  *putter    // the PUTs of saves (fastput.go)
	// writing is held (read-locked) by every write in progress, so that
	// Close can wait for them (beginWrite).
	writing sync.RWMutex
	// noConditionalGet: the server answered a GET's If-None-Match with
	// 412; the cache is no longer used.
	noConditionalGet atomic.Bool

	// sweep is where DeleteExpired continues; its mutex also makes the
	// calls of one Store run one at a time.
	sweep struct {
		mu    sync.Mutex
		after string // the last S3 key examined; "": the start
	}

	usage usageState // usage.go

	// keys is set in single-writer mode, and lease once HoldLease took it
	// (lease.go).
	keys  *keyLocks
	lease atomic.Pointer[lease]

	slow slowLists // prefixes whose listing missed the deadline (slowlist.go)
}

var (
	_ store.Driver       = (*Driver)(nil)
	_ store.StreamDriver = (*Driver)(nil)
)

// Open validates opts and returns a Store that talks to S3 through
// client, which the caller builds and configures (region, endpoint,
// path-style addressing, credentials, HTTP transport). It does not contact
// S3: a missing bucket or bad credentials show in Ping and in every call.
func Open(client *s3.Client, opts Options) (*Store, error) {
	d, err := OpenDriver(client, opts)
	if err != nil {
		return nil, err
	}
	return newStore(d, opts), nil
}

// OpenDriver is Open without the portable store: the driver alone, which
// a store.Bucket (store.New) must wrap before anything else calls it.
// opts.Now is the Bucket's, not the driver's.
func OpenDriver(client *s3.Client, opts Options) (*Driver, error) {
	if client == nil {
		return nil, errors.New("s3store: open: a client is required")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("s3store: open: %w", err)
	}
	timeout := opts.CallTimeout
	if timeout == 0 {
		timeout = DefaultCallTimeout
	}
	base := opts.Prefix
	if base != "" {
		base += "/"
	}
	d := &Driver{
		client:  client,
		bucket:  opts.Bucket,
		base:    base,
		timeout: timeout,
		spool:   opts.SpoolDir,
		cache:   newReadCache(opts.ReadCache),
		getter:  newGetter(client, opts.Bucket),
		putter:  newPutter(client, opts.Bucket),
	}
	if opts.SingleWriter {
		d.keys = &keyLocks{seed: maphash.MakeSeed()}
		d.cache = nil
	}
	return d, nil
}

// callOptions are the client settings this package depends on, applied to
// every call so that any client works: checksums only where an operation
// requires them (records carry their own SHA-256, ranged header reads
// cannot be validated, and S3-compatible servers differ in trailing
// checksum support), and no log line about skipped validation.
func callOptions(o *s3.Options) {
	o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	o.DisableLogOutputChecksumValidationSkipped = true
}

var errClosed = errors.New("store is closed")

// beginWrite is begin for a write that changes usage (Put, PutStream,
// Delete, DeleteExpired): Close waits for it to end. end must be called
// when it has settled its usage.
func (s *Driver) beginWrite(ctx context.Context, op string) (end func(), err error) {
	s.writing.RLock()
	if err := s.begin(ctx, op); err != nil {
		s.writing.RUnlock()
		return nil, err
	}
	if s.keys != nil {
		if err := s.lease.Load().check(time.Now()); err != nil {
			s.writing.RUnlock()
			return nil, fmt.Errorf("s3store: %s: %w", op, err)
		}
	}
	return s.writing.RUnlock, nil
}

// begin runs the checks every method starts with.
func (s *Driver) begin(ctx context.Context, op string) error {
	if s.closed.Load() {
		return fmt.Errorf("s3store: %s: %w", op, errClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("s3store: %s: %w", op, err)
	}
	return nil
}

// call returns the context of one S3 call: ctx with the call deadline.
func (s *Driver) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// fail wraps an S3 failure of op on what. A canceled or expired caller
// context wins over whatever the SDK made of it; the call deadline is a
// backend failure, not the caller's.
func (s *Driver) fail(ctx context.Context, op string, what any, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("s3store: %s %v: %w", op, what, cerr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		e := fmt.Errorf("s3store: %s %v: no answer from S3 within %v (store.s3.callTimeout): %v", op, what, s.timeout, err)
		if errors.Is(err, store.ErrSlowListing) {
			return slowListingError{e}
		}
		return e
	}
	return fmt.Errorf("s3store: %s %v: %w", op, what, err)
}

// conflict is the error of a failed condition; the Bucket names the
// operation and the key.
func conflict(why string) error {
	return fmt.Errorf("%s: %w", why, store.ErrPreconditionFailed)
}

// apiError returns the HTTP status and S3 error code of err, if any.
func apiError(err error) (status int, code string) {
	var re *awshttp.ResponseError
	var ge *s3Error
	switch {
	case errors.As(err, &re):
		status = re.HTTPStatusCode()
	case errors.As(err, &ge):
		status = ge.status
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

// maxSegmentLen is the longest '/'-separated key segment: S3-compatible
// servers that keep objects as files (versitygw posix, MinIO) cannot store
// longer names (NAME_MAX).
const maxSegmentLen = 255

// isNotModified reports a 304 to a GET with If-None-Match.
func isNotModified(err error) bool {
	status, code := apiError(err)
	return status == http.StatusNotModified || code == "NotModified"
}

// isMissing reports whether err says the object does not exist (or cannot,
// because its key is too long for the server). A missing bucket is not a
// missing object.
func isMissing(err error) bool {
	status, code := apiError(err)
	switch code {
	case "NoSuchBucket":
		return false
	case "NoSuchKey", "NotFound", "KeyTooLongError":
		return true
	}
	return status == http.StatusNotFound
}

// isConflict reports whether a conditional request failed its condition:
// 412, 409 ConditionalRequestConflict (AWS, for concurrent conditional
// writes), or a missing object for If-Match.
func isConflict(err error) bool {
	status, code := apiError(err)
	switch {
	case status == http.StatusPreconditionFailed, code == "PreconditionFailed":
		return true
	case code == "ConditionalRequestConflict":
		return true
	case code == "NoSuchKey":
		return true
	}
	return false
}

// readAll reads an object body of size n (-1 or 0 when unknown).
func readAll(r io.Reader, n int64) ([]byte, error) {
	var buf bytes.Buffer
	if n > 0 && n <= 1<<30 {
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// head is the header of a stored object and its ETag.
type head struct {
	rec  record
	etag string
	hlen int // length of the header: the body starts there
}

// meta returns the stored metadata with its key.
func (h *head) meta(k store.Key) store.Meta {
	m := h.rec.meta
	m.Key = k
	return m
}

// readHead returns the header of the object at objKey, or nil when there is
// none. Expired objects are returned: callers decide.
func (s *Driver) readHead(ctx context.Context, objKey string) (*head, error) {
	for range maxAttempts {
		h, again, err := s.readHeadOnce(ctx, objKey)
		if !again {
			return h, err
		}
	}
	return nil, errors.New("the object kept changing while its header was read")
}

// readHeadOnce reads the header with a ranged GET, and a second one bound
// to the first's ETag when the header is longer than headProbe. again
// reports that the object changed between the two.
func (s *Driver) readHeadOnce(ctx context.Context, objKey string) (h *head, again bool, err error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	buf, etag, err := s.getRange(cctx, objKey, headProbe, "")
	if err != nil {
		if isMissing(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	n, err := headerLen(buf)
	if err != nil {
		return nil, false, err
	}
	if n > len(buf) {
		if len(buf) < headProbe {
			return nil, false, fmt.Errorf("%w: header of %d bytes in an object of %d", errCorrupt, n, len(buf))
		}
		if etag == "" {
			return nil, false, errors.New("the server returned no ETag")
		}
		buf, _, err = s.getRange(cctx, objKey, n, etag)
		if err != nil {
			if isMissing(err) || isConflict(err) {
				return nil, true, nil
			}
			return nil, false, err
		}
	}
	rec, hlen, err := decodeHeader(buf)
	if err != nil {
		return nil, false, err
	}
	return &head{rec: rec, etag: etag, hlen: hlen}, false, nil
}

// getRange reads the first n bytes of the object (fewer if it is shorter),
// if its ETag is ifMatch when that is set.
func (s *Driver) getRange(ctx context.Context, objKey string, n int, ifMatch string) ([]byte, string, error) {
	in := &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(objKey),
		Range:  aws.String("bytes=0-" + strconv.Itoa(n-1)),
	}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := s.client.GetObject(ctx, in, callOptions)
	if err != nil {
		return nil, "", err
	}
	defer out.Body.Close()
	buf, err := readAll(io.LimitReader(out.Body, int64(n)), aws.ToInt64(out.ContentLength))
	if err != nil {
		return nil, "", err
	}
	return buf, aws.ToString(out.ETag), nil
}

// Read implements store.Driver with one GET, conditional on the ETag of
// a cached copy when there is one. fn sees the cached body or the fresh
// buffer's tail; the Bucket copies what it returns.
func (s *Driver) Read(ctx context.Context, k store.Key, fn func(m *store.Meta, body []byte) error) error {
	return s.ReadGated(ctx, k, nil, fn)
}

// ReadGated implements store.GateDriver with the same one GET as Read:
// the record's header comes first in the object, so gate sees the
// metadata before the body is read off the connection, and a refused
// object's body is not downloaded (the connection is closed instead, or
// drained when little is left). A cached copy answered by 304 is gated on
// its cached metadata.
func (s *Driver) ReadGated(ctx context.Context, k store.Key, gate func(m *store.Meta) error, fn func(m *store.Meta, body []byte) error) error {
	if err := s.begin(ctx, "get"); err != nil {
		return err
	}
	objKey := s.objectKey(k)
	if len(objKey) > maxKeyLen {
		return store.ErrNotFound
	}
	var c *cached
	if !s.noConditionalGet.Load() {
		c = s.cache.get(objKey)
	}
	inm := ""
	if c != nil {
		inm = c.etag
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	resp, err := s.getter.get(cctx, objKey, inm)
	if c != nil && err != nil && isConflict(err) && !isMissing(err) {
		// A server that answers a matching If-None-Match on a GET with
		// 412 (as it would on a PUT) instead of 304: ask again without,
		// and stop caching, which would cost two round trips a read.
		s.noConditionalGet.Store(true)
		s.cache.remove(objKey)
		c, inm = nil, ""
		resp, err = s.getter.get(cctx, objKey, inm)
	}
	if err != nil {
		switch {
		case c != nil && isNotModified(err):
			m := c.rec.meta
			m.Key = k
			if gate != nil {
				if err := gate(&m); err != nil {
					return err
				}
			}
			return fn(&m, c.body)
		case isMissing(err):
			s.cache.remove(objKey)
			return store.ErrNotFound
		}
		return s.fail(ctx, "get", k, err)
	}
	defer resp.Body.Close()
	buf, refused, err := readGatedBody(resp.Body, resp.ContentLength, k, gate)
	switch {
	case refused != nil:
		return refused
	case errors.Is(err, errCorrupt):
		s.cache.remove(objKey)
		return fmt.Errorf("s3store: get %s: %w", k, err)
	case err != nil:
		return s.fail(ctx, "get", k, err)
	}
	rec, body, err := decodeRecord(buf)
	if err != nil {
		s.cache.remove(objKey)
		return fmt.Errorf("s3store: get %s: %w", k, err)
	}
	if isTombstone(&rec.meta) {
		s.cache.remove(objKey)
		return store.ErrNotFound
	}
	if s.cache != nil && !s.noConditionalGet.Load() {
		s.cache.put(&cached{key: objKey, etag: resp.Header.Get("ETag"), rec: rec, body: body})
	}
	rec.meta.Key = k
	return fn(&rec.meta, body)
}

// drainLimit is how much of a refused object's body ReadGated still reads
// off the connection so that it can be reused; a longer rest closes it.
const drainLimit = 64 << 10

// readGatedBody reads an object of n bytes (-1 or 0 when unknown) from r.
// With a gate, it first reads the record's header and calls gate on its
// metadata (a tombstone reads as ErrNotFound); a refusal is returned as
// refused, with the rest of the body left unread.
func readGatedBody(r io.Reader, n int64, k store.Key, gate func(*store.Meta) error) (buf []byte, refused, err error) {
	if gate == nil {
		buf, err = readAll(r, n)
		return buf, nil, err
	}
	var b bytes.Buffer
	if n > 0 && n <= 1<<30 {
		b.Grow(int(n) + bytes.MinRead)
	}
	probe := int64(headProbe)
	if n > 0 {
		probe = min(probe, n)
	}
	if _, err = io.CopyN(&b, r, probe); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	hlen, err := headerLen(b.Bytes())
	if err != nil {
		return nil, nil, err
	}
	if more := int64(hlen - b.Len()); more > 0 {
		if _, err = io.CopyN(&b, r, more); err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: header of %d bytes in a shorter object", errCorrupt, hlen)
			}
			return nil, nil, err
		}
	}
	rec, _, err := decodeHeader(b.Bytes())
	if err != nil {
		return nil, nil, err
	}
	m := rec.meta
	m.Key = k
	if isTombstone(&m) {
		return nil, store.ErrNotFound, nil
	}
	if refused = gate(&m); refused != nil {
		if rest := n - int64(b.Len()); rest > 0 && rest <= drainLimit {
			_, _ = io.Copy(io.Discard, r)
		}
		return nil, refused, nil
	}
	_, err = b.ReadFrom(r)
	return b.Bytes(), nil, err
}

// Stat implements store.Driver.
func (s *Driver) Stat(ctx context.Context, k store.Key) (store.Meta, error) {
	if err := s.begin(ctx, "stat"); err != nil {
		return store.Meta{}, err
	}
	objKey := s.objectKey(k)
	if len(objKey) > maxKeyLen {
		return store.Meta{}, store.ErrNotFound
	}
	h, err := s.readHead(ctx, objKey)
	if err != nil {
		return store.Meta{}, s.fail(ctx, "stat", k, err)
	}
	if h == nil {
		return store.Meta{}, store.ErrNotFound
	}
	return h.meta(k), nil
}

// putCond is the S3 condition of one PUT.
type putCond struct {
	ifNoneMatch bool   // If-None-Match: *
	ifMatch     string // If-Match: <ETag>, when set
}

// newWriteID returns a random id for one Put.
func newWriteID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// putObject writes rec and body at objKey under pc. retried reports that
// the SDK sent the PUT more than once: an earlier attempt may then have
// landed, whatever the last one answered.
func (s *Driver) putObject(ctx context.Context, objKey string, rec *record, body payload, pc putCond) (retried bool, err error) {
	header := encodeHeader(rec)
	size := int64(len(header)) + body.n
	fast := size <= maxFastPut && s.putter.resolve(ctx) // fastput.go
	h := md5.New()
	var sha hash.Hash
	var w io.Writer = h
	if fast && !s.putter.tls {
		sha = sha256.New()
		w = io.MultiWriter(h, sha)
	}
	if _, err := io.Copy(w, newRecordReader(header, body)); err != nil {
		return false, fmt.Errorf("reading the body: %w", err)
	}
	sum := h.Sum(nil)
	meta := map[string]string{
		"sha256":   rec.meta.SHA256,
		"write-id": rec.writeID,
	}
	if !rec.meta.Expires.IsZero() {
		meta["expires-at"] = rec.meta.Expires.Format("2006-01-02T15:04:05.000Z")
	}
	// send sends one PUT (with its own retries of transient answers) and
	// reports whether more than one attempt went out.
	var send func(cctx context.Context) (bool, error)
	if fast {
		hdr := fastPutHeader(base64.StdEncoding.EncodeToString(sum), contentType, meta, pc)
		var shaSum []byte
		if sha != nil {
			shaSum = sha.Sum(nil)
		}
		open := func() io.Reader { return newRecordReader(header, body) }
		send = func(cctx context.Context) (bool, error) {
			_, r, err := s.putter.put(cctx, objKey, hdr, open, size, shaSum)
			return r, err
		}
	} else {
		in := &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(objKey),
			ContentLength: aws.Int64(size),
			ContentMD5:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
			ContentType:   aws.String(contentType),
			Metadata:      meta,
		}
		if pc.ifNoneMatch {
			in.IfNoneMatch = aws.String("*")
		}
		if pc.ifMatch != "" {
			in.IfMatch = aws.String(pc.ifMatch)
		}
		send = func(cctx context.Context) (bool, error) {
			in.Body = newRecordReader(header, body)
			var sent atomic.Int32
			_, err := s.client.PutObject(cctx, in, callOptions, countAttempts(&sent))
			return sent.Load() > 1, err
		}
	}
	for attempt := 1; ; attempt++ {
		cctx, cancel := s.call(ctx)
		r, err := send(cctx)
		cancel()
		retried = retried || r
		if err == nil || attempt == 4 || !isTransientLayout(err) || ctx.Err() != nil {
			return retried, err
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
	}
}

// countAttempts counts in n the HTTP attempts of one call: it runs after
// the SDK's retry middleware ("Retry"), once per attempt.
func countAttempts(n *atomic.Int32) func(*s3.Options) {
	return func(o *s3.Options) {
		// A copy: the client's own APIOptions must not be appended to.
		o.APIOptions = append(o.APIOptions[:len(o.APIOptions):len(o.APIOptions)], func(st *middleware.Stack) error {
			return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("resourcedAttempts",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					n.Add(1)
					return next.HandleFinalize(ctx, in)
				}), "Retry", middleware.After)
		})
	}
}

// unknownOutcome is the error of a write that may have landed and been
// replaced since: an earlier attempt of ours may have succeeded, but the
// object no longer shows it.
func unknownOutcome() error {
	return fmt.Errorf("a retried request failed its condition and the object holds another write: %w", store.ErrUnknownOutcome)
}

// etagRetryDelay is the pause before reading an object again whose GET
// came back without an ETag: versitygw with --sidecar answers so while a
// concurrent PUT of the key has not stored its metadata yet.
const etagRetryDelay = 10 * time.Millisecond

// isTransientLayout reports a refusal that file-backed S3 servers give
// when a concurrent DELETE is removing the directory a PUT needs
// (versitygw posix: 409 ExistingObjectIsDirectory); the PUT succeeds when
// tried again.
func isTransientLayout(err error) bool {
	_, code := apiError(err)
	return code == "ExistingObjectIsDirectory"
}

// Put implements store.Driver; the package doc explains the conditions.
func (s *Driver) Put(ctx context.Context, obj *store.Object, cond store.Cond, now func() time.Time) (store.Meta, bool, error) {
	end, err := s.beginWrite(ctx, "put")
	if err != nil {
		return store.Meta{}, false, err
	}
	defer end()
	k := obj.Key
	objKey, err := s.putKey(k)
	if err != nil {
		return store.Meta{}, false, err
	}
	want := obj.Meta
	want.Key = store.Key{}
	w := &write{s: s, now: now, k: k, objKey: objKey, want: want, id: newWriteID(), body: memPayload(obj.Body)}
	return w.run(ctx, cond)
}

// putKey returns the S3 key of a Put of k, or why there can be none: a
// key too long for S3.
func (s *Driver) putKey(k store.Key) (string, error) {
	objKey := s.objectKey(k)
	if len(objKey) > maxKeyLen {
		return "", fmt.Errorf("s3store: put %s: %w: the object key is %d bytes, S3 allows %d", k, store.ErrInvalidKey, len(objKey), maxKeyLen)
	}
	if mk := s.markerKey(k); len(mk) > maxKeyLen {
		return "", fmt.Errorf("s3store: put %s: %w: the key of its public index marker is %d bytes, S3 allows %d", k, store.ErrInvalidKey, len(mk), maxKeyLen)
	}
	for seg := range strings.SplitSeq(objKey, "/") {
		if len(seg) > maxSegmentLen {
			return "", fmt.Errorf("s3store: put %s: %w: a key segment is %d bytes; file-backed S3 servers allow %d", k, store.ErrInvalidKey, len(seg), maxSegmentLen)
		}
	}
	return objKey, nil
}

// run carries out the write under cond, then updates the public index.
func (w *write) run(ctx context.Context, cond store.Cond) (store.Meta, bool, error) {
	s, k := w.s, w.k
	var (
		m        store.Meta
		replaced bool
		err      error
	)
	unlock := s.keyLock(w.objKey)
	defer unlock()
	w.usage = newIntent(s, k.Tenant(), cond.Quota, w.id)
	switch cond.Kind {
	case store.IfNone:
		m, err = w.create(ctx)
	case store.IfMatch:
		m, err = w.replace(ctx, cond.SHA256)
		replaced = err == nil
	default:
		m, replaced, err = w.always(ctx)
	}
	w.usage.settle(ctx, err == nil)
	if err != nil {
		return store.Meta{}, false, err
	}
	// The object is stored; now its marker (see "Public index").
	if err := s.syncMarker(ctx, k, &m, w.mayHaveMarker, w.now); err != nil {
		return store.Meta{}, false, fmt.Errorf("s3store: put %s: stored, but: %w", k, err)
	}
	return m, replaced, nil
}

// write is one Put in progress.
type write struct {
	s      *Driver
	now    func() time.Time // the Bucket's clock
	k      store.Key
	objKey string
	want   store.Meta // normalized, without Key
	id     string     // write id, the same for every attempt
	body   payload

	// uncertain: a PUT of this write was retried by the SDK, so it may
	// have landed although it answered a conflict. A conflict is then
	// final only if the object holds our write id (success); otherwise
	// the outcome is unknown (see unknownOutcome).
	uncertain bool

	// usage is the write's reservation (see "Quotas").
	usage *intent

	// mayHaveMarker: the object the last attempt replaced may have had a
	// public index marker. False only when it is known not to: none, or
	// one that is not public and listed, bound by the write's condition.
	mayHaveMarker bool
}

// replacing records what the next attempt's PUT under pc replaces: h when
// pc binds the PUT to it, no object for If-None-Match, or anything when
// the PUT is unconditional.
func (w *write) replacing(h *head, pc putCond) {
	switch {
	case pc.ifNoneMatch:
		w.mayHaveMarker = false
	case pc.ifMatch != "" && h != nil:
		w.mayHaveMarker = indexed(&h.rec.meta)
	default:
		w.mayHaveMarker = true
	}
}

// put reserves the usage the PUT adds and writes the wanted metadata with
// created as Created under pc; h is the object pc binds the PUT to, if
// any. A reservation over the quota fails with store.ErrQuotaExceeded.
func (w *write) put(ctx context.Context, created time.Time, pc putCond, h *head) (store.Meta, error) {
	var old delta // an unconditional PUT counts as a create: at most an over-count
	if pc.ifMatch != "" {
		old = counted(h)
	}
	d := delta{w.want.Size - old.Bytes, 1 - old.Objects}
	if err := w.usage.reserve(ctx, d); err != nil {
		return store.Meta{}, err
	}
	if w.usage.stale() {
		return store.Meta{}, errors.New("the usage reservation is too old to write under; try again")
	}
	rec := record{meta: w.want, writeID: w.id}
	rec.meta.Created = created
	retried, err := w.s.putObject(ctx, w.objKey, &rec, w.body, pc)
	w.uncertain = w.uncertain || retried
	if err != nil {
		if status, _ := apiError(err); retried || status == 0 {
			w.usage.maybeLanded = true
		}
		return store.Meta{}, err
	}
	m := rec.meta
	m.Key = w.k
	return m, nil
}

// reread reads the object after a conflict; own reports that it holds this
// write, whose stored metadata is then returned.
func (w *write) reread(ctx context.Context) (h *head, own bool, m store.Meta, err error) {
	h, err = w.s.readHead(ctx, w.objKey)
	if err != nil {
		return nil, false, store.Meta{}, w.s.fail(ctx, "put", w.k, err)
	}
	if h != nil && h.rec.writeID == w.id {
		return h, true, h.meta(w.k), nil
	}
	return h, false, store.Meta{}, nil
}

// create is Put with IfNone.
func (w *write) create(ctx context.Context) (store.Meta, error) {
	pc := putCond{ifNoneMatch: true}
	var h *head
	for range maxAttempts {
		w.replacing(h, pc)
		m, err := w.put(ctx, w.want.Created, pc, h)
		if err == nil {
			return m, nil
		}
		var overQuota error
		if errors.Is(err, store.ErrQuotaExceeded) {
			if !pc.ifNoneMatch {
				return store.Meta{}, err
			}
			overQuota = err
		}
		// Over the quota as a new object: the precondition first (an
		// object there fails it; an expired one counts, and is replaced).
		if overQuota == nil && !isConflict(err) {
			return store.Meta{}, w.s.fail(ctx, "put", w.k, err)
		}
		var own bool
		h, own, m, err = w.reread(ctx)
		switch {
		case err != nil:
			return store.Meta{}, err
		case own:
			w.mayHaveMarker = true // what our write replaced is unknown
			return m, nil
		case w.uncertain:
			return store.Meta{}, unknownOutcome()
		case h == nil && overQuota != nil:
			return store.Meta{}, overQuota
		case h == nil:
			pc = putCond{ifNoneMatch: true} // deleted meanwhile: create again
		case !h.rec.meta.Expired(w.now()):
			return store.Meta{}, conflict("exists")
		case h.etag == "":
			time.Sleep(etagRetryDelay) // see etagRetryDelay
			continue
		default:
			pc = putCond{ifMatch: h.etag} // an expired object: replace exactly it
		}
	}
	return store.Meta{}, conflict("changed during every attempt")
}

// replace is Put with IfMatch sha.
func (w *write) replace(ctx context.Context, sha string) (store.Meta, error) {
	for range maxAttempts {
		h, own, m, err := w.reread(ctx)
		switch {
		case err != nil:
			return store.Meta{}, err
		case own: // an earlier attempt of ours landed after all
			w.mayHaveMarker = true
			return m, nil
		case w.uncertain:
			return store.Meta{}, unknownOutcome()
		case h == nil || h.rec.meta.Expired(w.now()):
			return store.Meta{}, conflict("does not exist")
		case h.rec.meta.SHA256 != sha:
			return store.Meta{}, conflict("has another body")
		case h.etag == "":
			time.Sleep(etagRetryDelay) // see etagRetryDelay
			continue
		}
		pc := putCond{ifMatch: h.etag}
		w.replacing(h, pc)
		m, err = w.put(ctx, h.rec.meta.Created, pc, h)
		if err == nil {
			return m, nil
		}
		if errors.Is(err, store.ErrQuotaExceeded) {
			return store.Meta{}, err
		}
		if !isConflict(err) {
			return store.Meta{}, w.s.fail(ctx, "put", w.k, err)
		}
	}
	return store.Meta{}, conflict("changed during every attempt")
}

// always is Put with Always.
func (w *write) always(ctx context.Context) (store.Meta, bool, error) {
	var replaced bool // what the previous attempt would have reported
	for attempt := 1; ; attempt++ {
		h, own, m, err := w.reread(ctx)
		switch {
		case err != nil:
			return store.Meta{}, false, err
		case own:
			w.mayHaveMarker = true
			return m, replaced, nil
		case w.uncertain:
			// Writing again could show our body, then another, then ours.
			return store.Meta{}, false, unknownOutcome()
		}
		live := h != nil && !h.rec.meta.Expired(w.now())
		created := w.want.Created
		if live {
			created = h.rec.meta.Created
		}
		var pc putCond
		switch {
		case attempt == maxAttempts:
			// Unconditional: Always never fails for contention.
		case h == nil:
			pc.ifNoneMatch = true
		case h.etag != "":
			pc.ifMatch = h.etag
		}
		w.replacing(h, pc)
		m, err = w.put(ctx, created, pc, h)
		if err == nil {
			return m, live, nil
		}
		if errors.Is(err, store.ErrQuotaExceeded) {
			return store.Meta{}, false, err
		}
		if pc == (putCond{}) || !isConflict(err) {
			return store.Meta{}, false, w.s.fail(ctx, "put", w.k, err)
		}
		replaced = live
	}
}

// tombstoneExpires is the expiry of a tombstone: a moment every clock has
// passed, so every process (and every older version of this package)
// takes the record for an expired object.
var tombstoneExpires = time.UnixMilli(1).UTC()

// isTombstone reports a record Delete wrote.
func isTombstone(m *store.Meta) bool {
	return m.Expires.Equal(tombstoneExpires)
}

// Delete implements store.Driver: it replaces the object with a tombstone
// by a PUT bound with If-Match to the ETag of the header it read (see the
// package doc, "Delete").
func (s *Driver) Delete(ctx context.Context, k store.Key, cond store.Cond, now func() time.Time) error {
	end, err := s.beginWrite(ctx, "delete")
	if err != nil {
		return err
	}
	defer end()
	objKey := s.objectKey(k)
	if len(objKey) > maxKeyLen {
		return store.ErrNotFound
	}
	defer s.keyLock(objKey)()
	id := newWriteID()
	uncertain := false // a tombstone PUT was retried: it may have landed
	var bound *head    // what the last tombstone PUT was bound to
	// The usage a Delete gives back is reserved before the tombstone PUT
	// like any write's, and committed after it (see "Quotas").
	usage := newIntent(s, k.Tenant(), store.Quota{}, id)
	stored := false
	defer func() { usage.settle(ctx, stored) }()
	// deleted finishes a Delete whose tombstone replaced h.
	deleted := func(h *head) error {
		stored = true
		if !indexed(&h.rec.meta) {
			return nil
		}
		// The object is gone; now its marker (see "Public index").
		if err := s.removeMarker(ctx, k, now); err != nil {
			return fmt.Errorf("s3store: delete %s: deleted, but: %w", k, err)
		}
		return nil
	}
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		h, err := s.readHead(ctx, objKey)
		if err != nil {
			return s.fail(ctx, "delete", k, err)
		}
		if h != nil && h.rec.writeID == id {
			return deleted(bound) // an earlier, retried attempt of ours landed
		}
		if uncertain {
			return fmt.Errorf("s3store: delete %s: %w", k, unknownOutcome())
		}
		if h == nil || h.rec.meta.Expired(now()) {
			return store.ErrNotFound
		}
		if cond.Kind == store.IfMatch && h.rec.meta.SHA256 != cond.SHA256 {
			return conflict("has another body")
		}
		if h.etag == "" {
			time.Sleep(etagRetryDelay) // see etagRetryDelay
			continue
		}
		tomb := record{writeID: id, meta: store.Meta{
			Created:    h.rec.meta.Created,
			Modified:   now().Truncate(time.Millisecond).UTC(),
			Expires:    tombstoneExpires,
			SHA256:     store.Sum(nil),
			MIMEType:   contentType,
			Visibility: store.Private,
		}}
		bound = h
		c := counted(h)
		if err := usage.reserve(ctx, delta{-c.Bytes, -c.Objects}); err != nil {
			return s.fail(ctx, "delete", k, err)
		}
		retried, err := s.putObject(ctx, objKey, &tomb, memPayload(nil), putCond{ifMatch: h.etag})
		uncertain = uncertain || retried
		if status, _ := apiError(err); err != nil && (retried || status == 0) {
			usage.maybeLanded = true
		}
		switch {
		case err == nil:
			return deleted(h)
		case isConflict(err), isTransientLayout(err):
			// Replaced or deleted meanwhile: decide again, after a random
			// pause, so that a delete among writers of the same key does
			// not lose every race to them.
			if attempt < maxAttempts && !pause(ctx, attempt) {
				return s.fail(ctx, "delete", k, ctx.Err())
			}
			continue
		default:
			return s.fail(ctx, "delete", k, err)
		}
	}
	if cond.Kind == store.IfMatch {
		return conflict("changed during every attempt")
	}
	// Not a failed condition: an unconditional Delete has none. Nothing
	// was changed; the caller may try again.
	return fmt.Errorf("s3store: delete %s: %w", k, store.ErrContended)
}

func (s *Driver) deleteObject(ctx context.Context, in *s3.DeleteObjectInput) error {
	cctx, cancel := s.call(ctx)
	defer cancel()
	_, err := s.client.DeleteObject(cctx, in, callOptions)
	return err
}

func posOf(k store.Key) store.Position {
	return store.Position{Scheme: k.Scheme(), Path: k.Path()}
}

// List implements store.Driver; the package doc gives its cost.
func (s *Driver) List(ctx context.Context, q store.ListQuery, now func() time.Time) (store.Page, error) {
	if err := s.begin(ctx, "list"); err != nil {
		return store.Page{}, err
	}
	what := "tenant " + q.Tenant
	prefix := s.tenantPrefix(q.Tenant)
	if q.Scheme != "" {
		prefix = s.schemePrefix(q.Tenant, q.Scheme) + q.Prefix
		what = q.Scheme + "://" + q.Tenant + "/" + q.Prefix
	}
	var startAfter *string
	if q.After != (store.Position{}) {
		startAfter = aws.String(s.positionKey(q.Tenant, q.After))
	}
	l := lister{s: s, q: q, now: now()}
	var token *string
	for {
		in := &s3.ListObjectsV2Input{
			Bucket:  aws.String(s.bucket),
			Prefix:  aws.String(prefix),
			MaxKeys: aws.Int32(maxKeys(q.Limit)),
		}
		if token != nil {
			in.ContinuationToken = token
		} else {
			in.StartAfter = startAfter
		}
		out, err := s.listPage(ctx, prefix, in)
		if err != nil {
			return store.Page{}, s.fail(ctx, "list", what, err)
		}
		var cands []store.Key
		for _, o := range out.Contents {
			k, ok := s.parseKey(q.Tenant, aws.ToString(o.Key))
			if !ok || q.Scheme != "" && k.Scheme() != q.Scheme || !q.After.Less(posOf(k)) {
				continue // not ours, or at or before the cursor
			}
			cands = append(cands, k)
		}
		done, err := l.add(ctx, cands)
		if err != nil {
			return store.Page{}, s.fail(ctx, "list", what, err)
		}
		if done || !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			return l.page, nil
		}
		token = out.NextContinuationToken
	}
}

// maxKeys asks for one key more than the page holds, to know More, within
// S3's 1000.
func maxKeys(limit int) int32 {
	if limit >= 1000 {
		return 1000
	}
	return int32(limit + 1)
}

func (s *Driver) listObjects(ctx context.Context, in *s3.ListObjectsV2Input) (*s3.ListObjectsV2Output, error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	return s.client.ListObjectsV2(cctx, in, callOptions)
}

// lister collects one page of List.
type lister struct {
	s    *Driver
	q    store.ListQuery
	now  time.Time
	page store.Page
}

// add reads the headers of cands, in order, and adds the live ones; done
// reports that the page is full and More is known.
func (l *lister) add(ctx context.Context, cands []store.Key) (done bool, err error) {
	for len(cands) > 0 {
		// Read as many as the page may still take, plus one to know More,
		// but at least listConcurrency (wasting a few reads at most).
		n := min(len(cands), 256)
		if need := l.q.Limit - len(l.page.Items); need < n {
			n = max(need+1, min(n, listConcurrency))
		}
		heads, err := l.s.readHeads(ctx, cands[:n])
		if err != nil {
			return false, err
		}
		for i, k := range cands[:n] {
			h := heads[i]
			if h == nil || h.rec.meta.Expired(l.now) || l.q.ListedOnly && !h.rec.meta.Listed {
				continue
			}
			if len(l.page.Items) == l.q.Limit {
				l.page.More = true
				return true, nil
			}
			l.page.Items = append(l.page.Items, h.meta(k))
			l.page.Next = posOf(k)
		}
		cands = cands[n:]
	}
	return false, nil
}

// readHeads reads the headers of keys, listConcurrency at a time. A key
// deleted since it was listed gives nil.
func (s *Driver) readHeads(ctx context.Context, keys []store.Key) ([]*head, error) {
	return s.readHeadsOpt(ctx, keys, false)
}

// readHeadsOpt is readHeads; with skipCorrupt, an object whose header does
// not decode gives nil too, instead of failing the whole read.
func (s *Driver) readHeadsOpt(ctx context.Context, keys []store.Key, skipCorrupt bool) ([]*head, error) {
	heads := make([]*head, len(keys))
	errs := make([]error, len(keys))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, listConcurrency)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			heads[i], errs[i] = s.readHead(ctx, s.objectKey(k))
			if skipCorrupt && errors.Is(errs[i], errCorrupt) {
				heads[i], errs[i] = nil, nil
			}
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", k, errs[i])
				cancel()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return heads, nil
}

// Ping implements store.Driver with HeadBucket: the bucket exists and the
// credentials may use it.
func (s *Driver) Ping(ctx context.Context) error {
	if err := s.begin(ctx, "ping"); err != nil {
		return err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	if _, err := s.client.HeadBucket(cctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}, callOptions); err != nil {
		return s.fail(ctx, "ping", "bucket "+s.bucket, err)
	}
	return nil
}

// Close marks the store closed. Later calls fail; a second Close does
// nothing. The SDK's HTTP client keeps no resources but idle connections,
// which it drops after 90 seconds.
func (s *Driver) Close() error {
	s.closed.Store(true)
	// Writes in progress end first (they may queue a commit), then the
	// commits queued without a waiter (see intent.settle), which normally
	// land within a round trip; one that does not leaves an over-count.
	s.writing.Lock()
	//lint:ignore SA2001 a barrier: every write that began has ended
	s.writing.Unlock()
	var errs []error
	if !s.flushUsage(closeFlush) {
		errs = append(errs, fmt.Errorf("s3store: closed with usage commits still in flight after %s: usage over-counts until the next reconcile", closeFlush))
	}
	if err := s.releaseLease(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// closeFlush bounds how long Close waits for queued usage commits.
const closeFlush = 30 * time.Second
