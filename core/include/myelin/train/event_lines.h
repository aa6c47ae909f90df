#pragma once
// Training events as JSON lines: `myelin train --events jsonl` writes one JSON object per event
// to stdout (rank 0 of a data-parallel run), and the studio reads them back from the process it
// launched, so a run in another process feeds the same live view as one in the studio. The
// writer and the reader are a pair: parse_event_line(event_line(e)) gives e back (the wall time
// included) for every kind the lines carry.
//
// A line is {"event": "<event_kind_name>", "time": <wall time>, ...the payload's fields}. Numbers
// that are not finite are written as the strings "nan", "inf" and "-inf". Besides the events,
// one line {"event": "RunCreated", "run": <id>, "store": "<path>"} says which run in which store
// the events belong to (the CLI writes it as soon as the run exists). Lines that are not JSON
// objects are the CLI's plain output and are passed over.
#include <myelin/train/events.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace myelin::train {

// Whether events of this kind are written as lines. Tensor summaries, feature maps and gradients
// through time are not: they are in the run store, which the studio's inspection views read.
bool event_line_carries(EventKind kind);

// The event as one line of JSON without the newline; empty for a kind that is not carried.
std::string event_line(const Event& event);

struct RunCreatedLine {
    int64_t run_id = -1;
    std::string store_path;
};
std::string run_created_line(const RunCreatedLine& run);

// One line read back: an event or the run's creation.
struct EventLine {
    std::optional<Event> event;
    std::optional<RunCreatedLine> run;
};

// nullopt for a line that is not a JSON object (plain output beside the events) or an object
// of an event kind this version does not know (a newer writer); throws myelin::Error naming the
// field for an object that is malformed.
std::optional<EventLine> parse_event_line(std::string_view line);

} // namespace myelin::train
