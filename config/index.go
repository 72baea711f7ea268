package config

import "os"

// Index configures the search index (search_resources).
type Index struct {
	// Backend is bleve (embedded, beside the bbolt data; one instance),
	// postgres (shared by every instance of a store), memory (tests) or
	// off. Default: bleve with store bbolt, memory with store memory, off
	// with store s3 (a bleve index serves one instance only).
	Backend string `yaml:"backend"`
	// MaxIndexBytes bounds the text indexed of one body (default 1MiB);
	// a body past it is found by its first MaxIndexBytes and metadata.
	MaxIndexBytes *Size `yaml:"maxIndexBytes"`
	// MaxPageBytes bounds a page of search hits: the JSON of its content
	// (and of its structuredContent). Default 8KiB, at least 4KiB.
	MaxPageBytes *Size `yaml:"maxPageBytes"`
	// Path of the bleve index directory. Default: <dataDir>/index.bleve
	Path     string        `yaml:"path"`
	Postgres IndexPostgres `yaml:"postgres"`
	// DeepResearch adds the search and fetch tools that ChatGPT's deep
	// research and company knowledge call (OpenAI's contract) over the
	// same index. Default: off.
	DeepResearch bool `yaml:"deepResearch"`
}

// IndexPostgres configures the postgres index. The connection URL holds
// a password, so it never is in this file: it comes from the environment
// variable RESOURCED_INDEX_POSTGRES_URL or from URLFile.
type IndexPostgres struct {
	// URLFile is a file holding the connection URL (mode 0600).
	URLFile string `yaml:"urlFile"`
	// Table is the index table (default resourced_index).
	Table string `yaml:"table"`
}

// IndexBackend is the index backend in force, defaults applied.
func (c *Config) IndexBackend() string {
	if c.Index.Backend != "" {
		return c.Index.Backend
	}
	switch c.Store.Backend {
	case "bbolt":
		return "bleve"
	case "memory":
		return "memory"
	}
	return "off"
}

// IndexPath is the bleve index directory.
func (c *Config) IndexPath() string {
	if c.Index.Path != "" {
		return c.Index.Path
	}
	return c.DataDir + string(os.PathSeparator) + "index.bleve"
}

// MaxIndexBytes is index.maxIndexBytes, default applied.
func (c *Config) MaxIndexBytes() int {
	if c.Index.MaxIndexBytes == nil {
		return 1 << 20
	}
	return int(*c.Index.MaxIndexBytes)
}

// MaxPageBytes is index.maxPageBytes, default applied.
func (c *Config) MaxPageBytes() int {
	if c.Index.MaxPageBytes == nil {
		return 8 << 10
	}
	return int(*c.Index.MaxPageBytes)
}

// applyIndexDefaults fills in what configs/resourced.example.yaml shows.
func (c *Config) applyIndexDefaults() {
	if c.Index.MaxIndexBytes == nil {
		m := Size(1 << 20)
		c.Index.MaxIndexBytes = &m
	}
	if c.Index.MaxPageBytes == nil {
		m := Size(8 << 10)
		c.Index.MaxPageBytes = &m
	}
	if c.Index.Postgres.Table == "" {
		c.Index.Postgres.Table = "resourced_index"
	}
}

func (c *Config) validateIndex(p *problems) {
	switch c.Index.Backend {
	case "", "bleve", "memory", "off":
	case "postgres":
		if c.Index.Postgres.URLFile == "" && os.Getenv("RESOURCED_INDEX_POSTGRES_URL") == "" {
			p.bad("index.postgres.urlFile", "required when index.backend is \"postgres\" (or set RESOURCED_INDEX_POSTGRES_URL)")
		}
	default:
		p.bad("index.backend", "want bleve, postgres, memory or off, got %q", c.Index.Backend)
	}
	if c.Index.DeepResearch && c.IndexBackend() == "off" {
		p.bad("index.deepResearch", "needs a search index; index.backend is off (with store s3 the default is off: set postgres)")
	}
	if m := c.Index.MaxIndexBytes; m != nil && (*m < 1024 || *m > 64<<20) {
		p.bad("index.maxIndexBytes", "want 1KiB to 64MiB, got %d", *m)
	}
	// 4KiB: a page of one hit at its shortest fits (fulltext.MinPageBytes).
	if m := c.Index.MaxPageBytes; m != nil && (*m < 4<<10 || *m > 1<<20) {
		p.bad("index.maxPageBytes", "want 4KiB to 1MiB, got %d", *m)
	}
}
