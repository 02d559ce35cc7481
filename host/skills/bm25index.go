package skills

import (
	"context"
	"database/sql"
	"fmt"
	"math"
)

// bm25Index is FTS5's BM25 of every indexed term over every skill, built
// from the FTS5 index itself (fts5vocab 'instance': term, row, column,
// offset) each time the indexed content changes, so that the request path
// ranks without SQLite: a query term is case-folded and Porter-stemmed as
// FTS5 does (porterStem), then looked up. The scores are computed with
// fts5_aux.c's formula (k1 = 1.2, b = 0.75, IDF clamped to 1e-6, column
// weights bm25Weights, document length = the row's tokens over all
// columns); TestTermCacheMatchesFTS5 checks them against FTS5's bm25().
type bm25Index struct {
	terms    map[string][]posting // FTS5 token → -bm25 of that token per skill
	postings int
}

// bm25ColWeights are bm25Weights by column (name, description, tags, body).
var bm25ColWeights = [4]float64{8, 4, 4, 1}

// maxIndexPostings bounds the in-memory index (16 bytes a posting, ~64 MB);
// a larger library ranks through FTS5 queries and the term cache instead.
const maxIndexPostings = 1 << 22

const vocabTable = "temp.skills_vocab_instance"

// buildBM25Index reads the FTS5 index. index maps skill names to their
// position in the snapshot.
func buildBM25Index(ctx context.Context, db *sql.DB, index map[string]int32) (*bm25Index, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE VIRTUAL TABLE IF NOT EXISTS `+vocabTable+` USING fts5vocab(main, 'skills_fts', 'instance')`); err != nil {
		return nil, fmt.Errorf("fts5vocab: %w", err)
	}
	pos, nRow, err := readSkillPositions(ctx, conn, index)
	if err != nil {
		return nil, err
	}
	raw, docLen, nToken, err := readVocabPostings(ctx, conn)
	if err != nil {
		return nil, err
	}
	return scorePostings(raw, docLen, pos, nRow, nToken), nil
}

// readSkillPositions maps the skills' row ids to their position in the
// snapshot (-1 when not in it) and counts the rows: FTS5's row count is the
// number of rows indexed (the triggers keep skills_fts in step with skills).
func readSkillPositions(ctx context.Context, conn *sql.Conn, index map[string]int32) (map[int64]int32, int, error) {
	pos := map[int64]int32{}
	rows, err := conn.QueryContext(ctx, `SELECT id, name FROM skills`)
	if err != nil {
		return nil, 0, err
	}
	nRow := 0
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, 0, err
		}
		nRow++
		if i, ok := index[name]; ok {
			pos[id] = i
		} else {
			pos[id] = -1
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return pos, nRow, nil
}

// rawPosting is one document of a term as fts5vocab lists it.
type rawPosting struct {
	doc  int64
	freq float64 // weighted: the sum of the column weights of its instances
}

// readVocabPostings reads every term instance from fts5vocab into
// postings by term, weighted by column, with each document's length in
// tokens and the total token count (bounded by maxIndexPostings).
func readVocabPostings(ctx context.Context, conn *sql.Conn) (map[string][]rawPosting, map[int64]int, int, error) {
	raw := map[string][]rawPosting{}
	docLen := map[int64]int{}
	nToken := 0
	rows, err := conn.QueryContext(ctx, `SELECT term, doc, col FROM `+vocabTable)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("fts5vocab: %w", err)
	}
	var term, col sql.RawBytes
	var doc int64
	var curTerm string
	var cur []rawPosting
	flush := func() {
		if cur != nil {
			raw[curTerm] = cur
		}
	}
	npost := 0
	for rows.Next() {
		if err := rows.Scan(&term, &doc, &col); err != nil {
			rows.Close()
			return nil, nil, 0, err
		}
		if cur == nil || string(term) != curTerm {
			flush()
			curTerm = string(term)
			cur = raw[curTerm] // normally nil: rows come term by term
		}
		w := 1.0
		if len(col) > 0 {
			switch col[0] {
			case 'n':
				w = bm25ColWeights[0]
			case 'd':
				w = bm25ColWeights[1]
			case 't':
				w = bm25ColWeights[2]
			case 'b':
				w = bm25ColWeights[3]
			}
		}
		if n := len(cur); n > 0 && cur[n-1].doc == doc {
			cur[n-1].freq += w
		} else {
			cur = append(cur, rawPosting{doc: doc, freq: w})
			npost++
			if npost > maxIndexPostings {
				rows.Close()
				return nil, nil, 0, fmt.Errorf("more than %d postings", maxIndexPostings)
			}
		}
		docLen[doc]++
		nToken++
	}
	flush()
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, 0, err
	}
	return raw, docLen, nToken, nil
}

// scorePostings turns the raw postings into bm25 scores by snapshot
// position, dropping the rows the snapshot does not hold.
func scorePostings(raw map[string][]rawPosting, docLen map[int64]int, pos map[int64]int32, nRow, nToken int) *bm25Index {
	const k1, b = 1.2, 0.75
	avgdl := float64(nToken) / float64(nRow)
	ix := &bm25Index{terms: make(map[string][]posting, len(raw))}
	for t, ps := range raw {
		nHit := int64(len(ps))
		idf := math.Log((float64(int64(nRow)-nHit) + 0.5) / (float64(nHit) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		out := make([]posting, 0, len(ps))
		for _, p := range ps {
			i, ok := pos[p.doc]
			if !ok || i < 0 {
				continue
			}
			d := float64(docLen[p.doc])
			norm := float64(k1 * float64(float64(1-b)+float64(b*d)/avgdl))
			out = append(out, posting{idx: i, score: idf * (float64(p.freq*(k1+1)) / float64(p.freq+norm))})
		}
		ix.terms[t] = out
		ix.postings += len(out)
	}
	return ix
}

// ftsToken maps a query term (a lowercased splitTerms token) to the token
// FTS5 indexes for it. ok is false when the term is not plain ASCII: then
// unicode61's folding is left to FTS5 itself.
func ftsToken(term string) (string, bool) {
	for i := 0; i < len(term); i++ {
		c := term[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return "", false
		}
	}
	return porterStem(term), true
}
