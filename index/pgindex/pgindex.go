// Package pgindex is the shared index.Driver, on PostgreSQL full-text
// search (tsvector, GIN, websearch_to_tsquery) through pgx: one table for
// every instance of resourced that serves the same store, so a save
// through one is found through the others at once.
//
// Layout, one row per document (the table name is Options.Table):
//
//	uri      text primary key ("C" collation: URI byte order)
//	tenant, scheme, path, media   text; shared boolean
//	created, expires              timestamptz (expires null: never)
//	sha256   text; doc  the Document as JSON, without its text
//	body     the text (snippets), NUL bytes as spaces
//	tsv      setweight(title and labels, 'A') || text, GIN
//	ltsv     title and labels alone, GIN (Query.Labels)
//
// Words are cut by index.Tokens before PostgreSQL sees them and indexed
// with the 'simple' configuration (lower case, no stemming, no stop
// words), so PostgreSQL agrees with the other drivers on what a word is;
// a query is built from websearch_to_tsquery of each group of the Expr
// (index.Group.Websearch), passed as parameters.
// Known differences: a phrase may match across the end of the labels and
// the start of the text (tsvector || joins their positions), and phrase
// positions past 16383 are clamped by PostgreSQL.
package pgindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/resourced/resourced/index"
)

// layout versions the table; a table of another layout is refused.
const layout = "resourced-index-1"

// DefaultTable is the table of an Options without one.
const DefaultTable = "resourced_index"

// StatementTimeout bounds every statement on the server side, behind the
// Index's own timeout.
const StatementTimeout = 30 * time.Second

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,50}$`)

// Options configure a Driver.
type Options struct {
	// URL is a PostgreSQL connection URL or DSN (required).
	URL string
	// Table is the table's name ([a-z_][a-z0-9_]{0,50}; "": DefaultTable).
	Table string
}

// Driver is a PostgreSQL index; safe for concurrent use.
type Driver struct {
	pool *pgxpool.Pool
	t    string // the table, validated
}

var _ index.Driver = (*Driver)(nil)

// Open connects, creates the table and its indexes when missing (under
// an advisory lock, so instances starting together do not race) and
// checks the layout of an existing one.
func Open(ctx context.Context, opts Options) (*Driver, error) {
	t := opts.Table
	if t == "" {
		t = DefaultTable
	}
	if !tableName.MatchString(t) {
		return nil, fmt.Errorf("pgindex: table %q: want [a-z_][a-z0-9_]{0,50}", t)
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, errors.New("pgindex: the connection URL does not parse") // its text may hold the password
	}
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(StatementTimeout.Milliseconds())
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgindex: connect: %w", err)
	}
	d := &Driver{pool: pool, t: t}
	if err := d.setup(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgindex: %s: %w", t, err)
	}
	return d, nil
}

func (d *Driver) setup(ctx context.Context) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "resourced-index:"+d.t); err != nil {
			return err
		}
		var got *string
		err := tx.QueryRow(ctx, `SELECT obj_description(to_regclass($1), 'pg_class')`, d.t).Scan(&got)
		if err != nil {
			return err
		}
		if got != nil {
			if *got != layout {
				return fmt.Errorf("the table holds layout %q, this version needs %q: drop it and run resourced reindex", *got, layout)
			}
			_, err := tx.Exec(ctx, expiresIndex(d.t))
			return err
		}
		for _, stmt := range []string{
			`CREATE TABLE IF NOT EXISTS ` + d.t + ` (
				uri text COLLATE "C" PRIMARY KEY,
				tenant text NOT NULL, scheme text NOT NULL, path text COLLATE "C" NOT NULL,
				media text NOT NULL, shared boolean NOT NULL,
				created timestamptz NOT NULL, expires timestamptz,
				sha256 text NOT NULL, doc text NOT NULL, body text NOT NULL,
				tsv tsvector NOT NULL, ltsv tsvector NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS ` + d.t + `_tsv ON ` + d.t + ` USING GIN (tsv)`,
			`CREATE INDEX IF NOT EXISTS ` + d.t + `_ltsv ON ` + d.t + ` USING GIN (ltsv)`,
			`CREATE INDEX IF NOT EXISTS ` + d.t + `_tenant ON ` + d.t + ` (tenant, created)`,
			`CREATE INDEX IF NOT EXISTS ` + d.t + `_shared ON ` + d.t + ` (created) WHERE shared`,
			expiresIndex(d.t),
			`COMMENT ON TABLE ` + d.t + ` IS '` + layout + `'`,
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// expiresIndex is the index the sweep's Expired reads; a table of this
// layout made before it existed gets it on its next Open.
func expiresIndex(t string) string {
	return `CREATE INDEX IF NOT EXISTS ` + t + `_expires ON ` + t + ` (expires) WHERE expires IS NOT NULL`
}

// noNUL replaces NUL, which a PostgreSQL text cannot hold.
func noNUL(s string) string { return strings.ReplaceAll(s, "\x00", " ") }

// Put implements index.Driver. A text whose tsvector would pass
// PostgreSQL's 1 MB bound is indexed by its first half, and so on.
func (d *Driver) Put(ctx context.Context, doc *index.Document) error {
	meta := *doc
	meta.Text = ""
	raw, err := json.Marshal(&meta)
	if err != nil {
		return err
	}
	var expires *time.Time
	if !doc.Expires.IsZero() {
		expires = &doc.Expires
	}
	labels := index.TokenText(strings.Join(append([]string{doc.Title}, doc.Labels...), "\n"))
	text := doc.Text
	for {
		_, err = d.pool.Exec(ctx, `INSERT INTO `+d.t+` AS t (uri, tenant, scheme, path, media, shared, created, expires, sha256, doc, body, tsv, ltsv)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
				setweight(to_tsvector('simple', $12), 'A') || to_tsvector('simple', $13), to_tsvector('simple', $12))
			ON CONFLICT (uri) DO UPDATE SET media = excluded.media, shared = excluded.shared, created = excluded.created,
				expires = excluded.expires, sha256 = excluded.sha256, doc = excluded.doc, body = excluded.body,
				tsv = excluded.tsv, ltsv = excluded.ltsv`,
			doc.URI(), doc.Tenant, doc.Scheme, doc.Path, index.MediaBase(doc.MediaType), doc.Shared, doc.Created, expires,
			doc.SHA256, string(raw), noNUL(text), labels, index.TokenText(text))
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "54000" && len(text) > 1 { // program_limit_exceeded: tsvector too long
			text = text[:len(text)/2]
			for len(text) > 0 && text[len(text)-1]&0xC0 == 0x80 {
				text = text[:len(text)-1]
			}
			continue
		}
		return err
	}
}

// Delete implements index.Driver.
func (d *Driver) Delete(ctx context.Context, r index.Ref) error {
	_, err := d.pool.Exec(ctx, `DELETE FROM `+d.t+` WHERE uri = $1`, r.URI())
	return err
}

// tsquery writes e as one tsquery: each group a websearch_to_tsquery of
// its alternatives, joined with && and && !! for the exclusions, so the
// precedence is Parse's (see index.Group.Websearch).
func tsquery(e *index.Expr, arg func(any) string) string {
	var parts []string
	for _, g := range e.All {
		parts = append(parts, `websearch_to_tsquery('simple', `+arg(g.Websearch())+`)`)
	}
	for _, p := range e.Not {
		parts = append(parts, `!! websearch_to_tsquery('simple', `+arg(p.Websearch())+`)`)
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// where builds the WHERE clause of p and its arguments; the text query,
// when there is one, is the expression match (for ts_rank).
func where(p *index.Plan) (cond, match string, args []any) {
	args = []any{p.Tenant, p.Now}
	conds := []string{`(tenant = $1 OR shared)`, `(expires IS NULL OR expires > $2)`}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if p.Match != nil {
		match = tsquery(p.Match, arg)
		conds = append(conds, `tsv @@ `+match)
	}
	for _, l := range p.Labels {
		conds = append(conds, `ltsv @@ `+tsquery(l, arg))
	}
	if p.Scheme != "" {
		conds = append(conds, `scheme = `+arg(p.Scheme))
	}
	if p.Prefix != "" {
		conds = append(conds, `starts_with(path, `+arg(p.Prefix)+`)`)
	}
	if p.MediaType != "" {
		conds = append(conds, `media = `+arg(p.MediaType))
	}
	if p.MediaPrefix != "" {
		conds = append(conds, `starts_with(media, `+arg(p.MediaPrefix)+`)`)
	}
	if !p.CreatedAfter.IsZero() {
		conds = append(conds, `created >= `+arg(p.CreatedAfter))
	}
	if !p.CreatedBefore.IsZero() {
		conds = append(conds, `created < `+arg(p.CreatedBefore))
	}
	if !p.ExpiresAfter.IsZero() {
		conds = append(conds, `(expires IS NULL OR expires >= `+arg(p.ExpiresAfter)+`)`)
	}
	if !p.ExpiresBefore.IsZero() {
		conds = append(conds, `expires < `+arg(p.ExpiresBefore))
	}
	return strings.Join(conds, " AND "), match, args
}

// Search implements index.Driver.
func (d *Driver) Search(ctx context.Context, p *index.Plan) ([]index.Hit, int, bool, error) {
	cond, match, args := where(p)
	score, order := `1::float8`, `created DESC, uri`
	if match != "" {
		score, order = `ts_rank(tsv, `+match+`)::float8`, `score DESC, uri`
	}
	n := len(args)
	rows, err := d.pool.Query(ctx, fmt.Sprintf(`SELECT doc, body, %s AS score FROM %s WHERE %s ORDER BY %s OFFSET $%d LIMIT $%d`,
		score, d.t, cond, order, n+1, n+2), append(args, p.Offset, p.Limit)...)
	if err != nil {
		return nil, 0, false, err
	}
	var hits []index.Hit
	for rows.Next() {
		var raw, body string
		var h index.Hit
		if err := rows.Scan(&raw, &body, &h.Score); err != nil {
			rows.Close()
			return nil, 0, false, err
		}
		if err := json.Unmarshal([]byte(raw), &h.Document); err != nil {
			rows.Close()
			return nil, 0, false, fmt.Errorf("pgindex: stored document: %w", err)
		}
		h.Text = body
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, err
	}
	var total int
	err = d.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %s WHERE %s LIMIT %d) AS m`, d.t, cond, index.MaxTotal+1), args...).Scan(&total)
	if err != nil {
		return nil, 0, false, err
	}
	if total > index.MaxTotal {
		return hits, index.MaxTotal, true, nil
	}
	return hits, total, false, nil
}

// Walk implements index.Driver: every document in URI order, by pages.
func (d *Driver) Walk(ctx context.Context, fn func(index.Entry) error) error {
	after := ""
	for {
		rows, err := d.pool.Query(ctx, `SELECT uri, tenant, scheme, path, sha256 FROM `+d.t+` WHERE uri > $1 ORDER BY uri LIMIT 1000`, after)
		if err != nil {
			return fmt.Errorf("pgindex: walk: %w", err)
		}
		var page []index.Entry
		for rows.Next() {
			var e index.Entry
			if err := rows.Scan(&after, &e.Tenant, &e.Scheme, &e.Path, &e.SHA256); err != nil {
				rows.Close()
				return fmt.Errorf("pgindex: walk: %w", err)
			}
			page = append(page, e)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("pgindex: walk: %w", err)
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(page) < 1000 {
			return nil
		}
	}
}

// Count implements index.Driver.
func (d *Driver) Count(ctx context.Context, tenant string) (int64, error) {
	var n int64
	err := d.pool.QueryRow(ctx, `SELECT count(*) FROM `+d.t+` WHERE $1 = '' OR tenant = $1`, tenant).Scan(&n)
	return n, err
}

// Expired implements index.Driver.
func (d *Driver) Expired(ctx context.Context, now time.Time, limit int) ([]index.Ref, error) {
	rows, err := d.pool.Query(ctx, `SELECT tenant, scheme, path FROM `+d.t+` WHERE expires <= $1 LIMIT $2`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("pgindex: expired: %w", err)
	}
	defer rows.Close()
	var out []index.Ref
	for rows.Next() {
		var r index.Ref
		if err := rows.Scan(&r.Tenant, &r.Scheme, &r.Path); err != nil {
			return nil, fmt.Errorf("pgindex: expired: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgindex: expired: %w", err)
	}
	return out, nil
}

// Ping reports whether the database answers.
func (d *Driver) Ping(ctx context.Context) error { return d.pool.Ping(ctx) }

// Close implements index.Driver.
func (d *Driver) Close() error {
	d.pool.Close()
	return nil
}
