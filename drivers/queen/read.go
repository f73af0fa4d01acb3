package queen

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/jackc/pgx/v5"
)

// readPage is how many rows one query returns.
const readPage = 5000

// row is one message as the database holds it.
type row struct {
	payload string
	created time.Time
	id      string
}

// cursor is a position in a partition's (created_at, id) order: the last
// row delivered, and the offset of the next.
type cursor struct {
	created time.Time
	id      string
	next    int64
	started bool
}

// page returns up to limit rows of partition part after c (from offset
// c.next when c has not started).
func (d *Driver) page(ctx context.Context, topic string, part int32, c cursor, limit int64) ([]row, error) {
	const sel = `SELECT coalesce(m.payload #>> '{}', ''), m.created_at, m.id::text FROM queen.messages m
		JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2`
	var rows pgx.Rows
	var err error
	if c.started {
		rows, err = d.db.Query(ctx, sel+` AND (m.created_at, m.id) > ($3::timestamptz, $4::uuid) ORDER BY m.created_at, m.id LIMIT $5`,
			topic, partitionName(part), c.created, c.id, limit)
	} else {
		rows, err = d.db.Query(ctx, sel+` ORDER BY m.created_at, m.id OFFSET $3 LIMIT $4`, topic, partitionName(part), c.next, limit)
	}
	if err != nil {
		return nil, d.dbErr(fmt.Sprintf("read %s/%s", topic, partitionName(part)), err)
	}
	var out []row
	var r row
	_, err = pgx.ForEachRow(rows, []any{&r.payload, &r.created, &r.id}, func() error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, d.dbErr(fmt.Sprintf("read %s/%s", topic, partitionName(part)), err)
	}
	return out, nil
}

// record turns a row at offset off into a record. A payload that is not
// the base64 the driver pushes (a foreign message) is delivered as its
// text: the verifier finds it is not one of ackcheck's.
func record(part int32, off int64, r row) drivers.Record {
	v, err := base64.StdEncoding.DecodeString(r.payload)
	if err != nil {
		v = []byte(r.payload)
	}
	return drivers.Record{Pos: drivers.Position{Partition: part, Offset: off}, Value: v, Timestamp: r.created}
}

// Read implements drivers.Driver with SQL: nothing is consumed, so no
// consumer group of anybody else's sees a difference. With spec.To, each
// partition is read in (created_at, id) order from its From-th row to its
// To-th: partitions with fewer than readPage rows to read are read many
// to a query (pageMany), up to readPage rows a query, so that read-back
// costs a round trip per readPage rows, not one per partition; a larger
// partition is read alone, a page at a time. Without spec.To, the
// partitions are followed (a live consumer) until ctx ends; a row
// committed after the follower passed its created_at (a transaction that
// began earlier and committed later) is not delivered live, as a
// cursor-following consumer would not see it either.
func (d *Driver) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	rep := drivers.NewReadReport(spec)
	if !spec.To.IsSet() {
		cursors := map[int32]*cursor{}
		spec.From.All(func(p int32, from int64) bool {
			cursors[p] = &cursor{next: from}
			return true
		})
		err := d.follow(ctx, spec.Topic, cursors, &rep, fn)
		return rep, err
	}
	var batch []span
	rows := int64(0)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := d.readMany(ctx, spec.Topic, batch, &rep, fn)
		batch, rows = batch[:0], 0
		return err
	}
	for i := range rep.Partitions {
		pr, p := rep.Partitions[i], int32(i)
		if !pr.Asked || pr.Complete {
			continue
		}
		from, to := pr.Next, pr.Target
		if to-from >= readPage {
			if err := d.readOne(ctx, spec.Topic, p, &rep, fn); err != nil {
				return rep, err
			}
			continue
		}
		if rows+(to-from) > readPage {
			if err := flush(); err != nil {
				return rep, err
			}
		}
		batch = append(batch, span{part: p, from: from, to: to})
		rows += to - from
	}
	err := flush() // before rep is copied out: it may note partitions
	return rep, err
}

// span is the rows [from, to) of one partition, for pageMany.
type span struct {
	part     int32
	from, to int64
}

// manyRow is one row of pageMany: its partition and offset.
type manyRow struct {
	row
	name string
	off  int64
}

// pageMany returns, in one query, the rows [from, to) of every span's
// partition, in spans' order, each partition's in offset order. A row's offset is its rank
// in its partition's (created_at, id) order, as page counts it.
func (d *Driver) pageMany(ctx context.Context, topic string, spans []span) ([]manyRow, error) {
	names := make([]string, len(spans))
	los := make([]int64, len(spans))
	his := make([]int64, len(spans))
	for i, s := range spans {
		names[i], los[i], his[i] = partitionName(s.part), s.from, s.to
	}
	const sel = `SELECT s.name, s.off, s.payload, s.created_at, s.id FROM (
		SELECT p.name, w.ord, w.lo, w.hi, coalesce(m.payload #>> '{}', '') AS payload, m.created_at, m.id::text AS id,
			row_number() OVER (PARTITION BY m.partition_id ORDER BY m.created_at, m.id) - 1 AS off
		FROM unnest($2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS w(name, lo, hi, ord)
		JOIN queen.partitions p ON p.name = w.name
		JOIN queen.queues q ON q.id = p.queue_id AND q.name = $1
		JOIN queen.messages m ON m.partition_id = p.id) s
		WHERE s.off >= s.lo AND s.off < s.hi ORDER BY s.ord, s.off`
	what := fmt.Sprintf("read %d partitions of %s (%s to %s)", len(spans), topic, names[0], names[len(names)-1])
	rows, err := d.db.Query(ctx, sel, topic, names, los, his)
	if err != nil {
		return nil, d.dbErr(what, err)
	}
	var out []manyRow
	var r manyRow
	_, err = pgx.ForEachRow(rows, []any{&r.name, &r.off, &r.payload, &r.created, &r.id}, func() error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, d.dbErr(what, err)
	}
	return out, nil
}

// readMany reads spans with one query (retried while the database does
// not answer) and records each partition's progress in rep. A partition
// that holds fewer rows than its span asks for ends short, with a note.
func (d *Driver) readMany(ctx context.Context, topic string, spans []span, rep *drivers.ReadReport, fn func(drivers.Record) error) error {
	rows, err := retry(ctx, dbWait, func() ([]manyRow, error) { return d.pageMany(ctx, topic, spans) })
	if err != nil {
		for _, s := range spans {
			rep.SetNote(s.part, err.Error())
		}
		return err
	}
	i := 0
	for _, s := range spans {
		pr := rep.At(s.part)
		name := partitionName(s.part)
		for ; i < len(rows) && rows[i].name == name; i++ {
			r := rows[i]
			if r.off != pr.Next {
				break // a gap cannot be: the offsets are ranks
			}
			if err := fn(record(s.part, r.off, r.row)); err != nil {
				return err
			}
			pr.Next++
			pr.Records++
		}
		pr.Complete = pr.Next >= pr.Target
		if !pr.Complete {
			rep.SetNote(s.part, fmt.Sprintf("the partition ends at row %d, before %d, the end read before the read-back", pr.Next, pr.Target))
		}
	}
	return nil
}

// readOne reads partition p alone, a page at a time, following its
// (created_at, id) cursor.
func (d *Driver) readOne(ctx context.Context, topic string, p int32, rep *drivers.ReadReport, fn func(drivers.Record) error) error {
	pr := rep.At(p)
	c := &cursor{next: pr.Next}
	for c.next < pr.Target {
		rows, err := retry(ctx, dbWait, func() ([]row, error) { return d.page(ctx, topic, p, *c, min(readPage, pr.Target-c.next)) })
		if err != nil {
			rep.SetNote(p, err.Error())
			return err
		}
		if len(rows) == 0 {
			rep.SetNote(p, fmt.Sprintf("the partition ends at row %d, before %d, the end read before the read-back", c.next, pr.Target))
			break
		}
		for _, r := range rows {
			if err := fn(record(p, c.next, r)); err != nil {
				return err
			}
			c.created, c.id, c.started = r.created, r.id, true
			c.next++
			pr.Records++
		}
		pr.Next = c.next
	}
	pr.Next = c.next
	pr.Complete = c.next >= pr.Target
	return nil
}

// follow delivers new rows of every partition until ctx ends, polling.
func (d *Driver) follow(ctx context.Context, topic string, cursors map[int32]*cursor, rep *drivers.ReadReport, fn func(drivers.Record) error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		for p, c := range cursors {
			rows, err := d.page(ctx, topic, p, *c, readPage)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				continue // a database that does not answer now may later
			}
			for _, r := range rows {
				if err := fn(record(p, c.next, r)); err != nil {
					return err
				}
				c.created, c.id, c.started = r.created, r.id, true
				c.next++
			}
			pr := rep.At(p)
			pr.Next, pr.Records = c.next, pr.Records+int64(len(rows))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
