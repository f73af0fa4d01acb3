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
// To-th. Without, the partitions are followed (a live consumer) until ctx
// ends; a row committed after the follower passed its created_at (a
// transaction that began earlier and committed later) is not delivered
// live, as a cursor-following consumer would not see it either.
func (d *Driver) Read(ctx context.Context, spec drivers.ReadSpec, fn func(drivers.Record) error) (drivers.ReadReport, error) {
	rep := drivers.ReadReport{Partitions: map[int32]drivers.PartitionRead{}}
	cursors := map[int32]*cursor{}
	for p, from := range spec.From {
		cursors[p] = &cursor{next: from}
		rep.Partitions[p] = drivers.PartitionRead{Next: from, Target: spec.To[p]}
	}
	if spec.To == nil {
		return rep, d.follow(ctx, spec.Topic, cursors, rep, fn)
	}
	for p, c := range cursors {
		pr := rep.Partitions[p]
		for c.next < pr.Target {
			rows, err := retry(ctx, dbWait, func() ([]row, error) { return d.page(ctx, spec.Topic, p, *c, min(readPage, pr.Target-c.next)) })
			if err != nil {
				pr.Note = err.Error()
				rep.Partitions[p] = pr
				return rep, err
			}
			if len(rows) == 0 {
				pr.Note = fmt.Sprintf("the partition ends at row %d, before %d, the end read before the read-back", c.next, pr.Target)
				break
			}
			for _, r := range rows {
				if err := fn(record(p, c.next, r)); err != nil {
					rep.Partitions[p] = pr
					return rep, err
				}
				c.created, c.id, c.started = r.created, r.id, true
				c.next++
				pr.Records++
			}
			pr.Next = c.next
		}
		pr.Next = c.next
		pr.Complete = c.next >= pr.Target
		rep.Partitions[p] = pr
	}
	return rep, nil
}

// follow delivers new rows of every partition until ctx ends, polling.
func (d *Driver) follow(ctx context.Context, topic string, cursors map[int32]*cursor, rep drivers.ReadReport, fn func(drivers.Record) error) error {
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
			pr := rep.Partitions[p]
			pr.Next, pr.Records = c.next, pr.Records+int64(len(rows))
			rep.Partitions[p] = pr
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
