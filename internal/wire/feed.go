package wire

// RecordFeedItem is an item of the key-wide records feed (GET /v1/records):
// a record of a collection stream or a delivery of a deliveries stream,
// exactly as a walk page or a delivery-changes page carries it.
type RecordFeedItem struct {
	RestaurantID string    `json:"restaurantId" jsonschema:"The restaurant, as list_restaurants returns it."`
	Stream       string    `json:"stream" jsonschema:"A collection name, or deliveries."`
	Record       *Envelope `json:"record,omitempty" jsonschema:"The record, exactly as a walk of the collection returns it (tombstones included); absent for a delivery."`
	Delivery     *Delivery `json:"delivery,omitempty" jsonschema:"The delivery, exactly as list_delivery_changes returns it; absent for a record."`
}

// RecordFeedStream is a stream the feed finished: where a walk of it
// would have ended, and the cursor that walk would have given.
type RecordFeedStream struct {
	RestaurantID  string   `json:"restaurantId" jsonschema:"The restaurant."`
	Stream        string   `json:"stream" jsonschema:"A collection name, or deliveries."`
	Head          Sequence `json:"head" jsonschema:"The stream's position the items returned stand at (a collection walk's pin, the last delivery's receive position); compare it with the heads GET /v1/changes lists, no arithmetic."`
	ChangesCursor string   `json:"changesCursor" jsonschema:"The cursor a walk of this stream gives on its last page: pass it as cursor to walk_records of the collection (or list_delivery_changes for deliveries) to get only what changed since; it never expires."`
}

// RecordFeedPage is a page of the records feed.
type RecordFeedPage struct {
	Data          []RecordFeedItem   `json:"data" jsonschema:"The items of this page, stream after stream (restaurantId, then stream), in each stream a walk's order; possibly none."`
	Streams       []RecordFeedStream `json:"streams" jsonschema:"The streams whose last item is on this page (or that held none), each once over the whole feed, with its head and changesCursor."`
	NextCursor    *string            `json:"nextCursor" jsonschema:"Pass it unchanged as cursor for the next page (any limit); null on the last page."`
	ChangesCursor *string            `json:"changesCursor" jsonschema:"On the last page only (null before): a cursor of list_changes (GET /v1/changes) listing every stream written since the feed began; it never expires."`
}

// AppendJSON appends the page as JSON (see Envelope.AppendJSON): records'
// data is copied as stored.
func (p RecordFeedPage) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"data":[`...)
	var o owner
	for i := range p.Data {
		it := &p.Data[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"restaurantId":`...)
		if b, err = appendString(b, it.RestaurantID); err != nil {
			return nil, err
		}
		b = append(b, `,"stream":`...)
		if b, err = appendString(b, it.Stream); err != nil {
			return nil, err
		}
		if it.Record != nil {
			b = append(b, `,"record":`...)
			if b, err = it.Record.appendJSON(b, &o); err != nil {
				return nil, err
			}
		}
		if it.Delivery != nil {
			b = append(b, `,"delivery":`...)
			if b, err = it.Delivery.AppendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	b = append(b, `],"streams":`...)
	if p.Streams == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range p.Streams {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"restaurantId":`...)
			if b, err = appendString(b, s.RestaurantID); err != nil {
				return nil, err
			}
			b = append(b, `,"stream":`...)
			if b, err = appendString(b, s.Stream); err != nil {
				return nil, err
			}
			b = appendMillis(append(b, `,"head":`...), int64(s.Head))
			b = append(b, `,"changesCursor":`...)
			if b, err = appendString(b, s.ChangesCursor); err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"nextCursor":`...)
	if b, err = appendNullable(b, p.NextCursor); err != nil {
		return nil, err
	}
	b = append(b, `,"changesCursor":`...)
	if b, err = appendNullable(b, p.ChangesCursor); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
