#include "profiler/event.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

namespace sluice::profiler {
namespace {

constexpr char kMagic[] = "SLUICE-PROFILE-EVENTS-1\n";
constexpr size_t kMagicLen = sizeof(kMagic) - 1;

// A bounds-checked cursor over a file's bytes; errors name the file and offset.
class Reader {
 public:
  Reader(const std::string& path, const std::string& data) : path_(path), data_(data) {}
  size_t pos() const { return pos_; }
  bool done() const { return pos_ >= data_.size(); }
  Status Get(void* out, size_t n, const char* what) {
    if (data_.size() - pos_ < n) {
      return DataLossError("profiler event file '" + path_ + "': truncated " + what +
                           " at offset " + std::to_string(pos_));
    }
    std::memcpy(out, data_.data() + pos_, n);
    pos_ += n;
    return Status::OK();
  }
  Status Str(std::string* s, const char* what) {
    uint16_t n = 0;
    SLUICE_RETURN_IF_ERROR(Get(&n, sizeof n, what));
    s->resize(n);
    return Get(s->data(), n, what);
  }

 private:
  const std::string& path_;
  const std::string& data_;
  size_t pos_ = 0;
};

}  // namespace

EventFileWriter::~EventFileWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

Status EventFileWriter::Open(const std::string& path) {
  path_ = path;
  f_ = std::fopen(path.c_str(), "wb");
  if (f_ == nullptr)
    return ErrnoToStatus(errno, "profiler: cannot create event file", path);
  Put(kMagic, kMagicLen);
  return Status::OK();
}

void EventFileWriter::Put(const void* p, size_t n) {
  if (f_ != nullptr && n > 0) std::fwrite(p, 1, n, f_);
  bytes_ += static_cast<int64_t>(n);
}

void EventFileWriter::Thread(uint32_t tid, uint32_t pid, const std::string& name) {
  const uint16_t n = static_cast<uint16_t>(std::min<size_t>(name.size(), 65535));
  Put("T", 1);
  Put(&tid, 4);
  Put(&pid, 4);
  Put(&n, 2);
  Put(name.data(), n);
}

void EventFileWriter::Name(int32_t id, const std::string& op, const std::string& prefix) {
  const uint16_t a = static_cast<uint16_t>(std::min<size_t>(op.size(), 65535));
  const uint16_t b = static_cast<uint16_t>(std::min<size_t>(prefix.size(), 65535));
  Put("N", 1);
  Put(&id, 4);
  Put(&a, 2);
  Put(op.data(), a);
  Put(&b, 2);
  Put(prefix.data(), b);
}

void EventFileWriter::Events(uint32_t tid, uint32_t pid, const Event* events,
                             uint32_t count) {
  if (count == 0) return;
  Put("E", 1);
  Put(&tid, 4);
  Put(&pid, 4);
  Put(&count, 4);
  Put(events, sizeof(Event) * count);
}

void EventFileWriter::Note(const std::string& text) {
  const uint16_t n = static_cast<uint16_t>(std::min<size_t>(text.size(), 65535));
  Put("M", 1);
  Put(&n, 2);
  Put(text.data(), n);
}

Status EventFileWriter::Close() {
  if (f_ == nullptr) return Status::OK();
  const bool bad = std::ferror(f_) != 0;
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (bad || rc != 0)
    return ErrnoToStatus(errno, "profiler: cannot write event file", path_);
  return Status::OK();
}

Status ReadEventFile(const std::string& path, EventLog* log) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return ErrnoToStatus(errno, "profiler: cannot open event file", path);
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  std::fclose(f);
  if (data.compare(0, kMagicLen, kMagic) != 0) {
    return DataLossError("profiler event file '" + path +
                         "': not an event file (bad magic at offset 0)");
  }
  Reader r(path, data);
  std::string skip(kMagicLen, '\0');
  SLUICE_RETURN_IF_ERROR(r.Get(skip.data(), kMagicLen, "magic"));
  // This file's name ids map onto the merged table by prefix; threads by (pid, tid).
  std::map<int32_t, int32_t> name_map;
  std::map<std::string, int32_t> by_prefix;
  for (size_t i = 0; i < log->names.size(); ++i) {
    by_prefix[log->names[i].op + "\n" + log->names[i].prefix] = static_cast<int32_t>(i);
  }
  std::map<std::pair<uint32_t, uint32_t>, int32_t> threads;
  for (size_t i = 0; i < log->threads.size(); ++i) {
    threads[{log->threads[i].pid, log->threads[i].tid}] = static_cast<int32_t>(i);
  }
  auto thread_index = [&](uint32_t pid, uint32_t tid) {
    auto [it, fresh] =
        threads.try_emplace({pid, tid}, static_cast<int32_t>(log->threads.size()));
    if (fresh) log->threads.push_back({pid, tid, ""});
    return it->second;
  };
  std::vector<std::pair<size_t, size_t>> event_ranges;  // names resolved at the end
  std::vector<int32_t> raw_names;
  while (!r.done()) {
    const size_t at = r.pos();
    char tag = 0;
    SLUICE_RETURN_IF_ERROR(r.Get(&tag, 1, "record tag"));
    if (tag == 'T') {
      uint32_t tid = 0, pid = 0;
      std::string name;
      SLUICE_RETURN_IF_ERROR(r.Get(&tid, 4, "thread record"));
      SLUICE_RETURN_IF_ERROR(r.Get(&pid, 4, "thread record"));
      SLUICE_RETURN_IF_ERROR(r.Str(&name, "thread name"));
      log->threads[thread_index(pid, tid)].name = name;
    } else if (tag == 'N') {
      int32_t id = 0;
      NameInfo info;
      SLUICE_RETURN_IF_ERROR(r.Get(&id, 4, "name record"));
      SLUICE_RETURN_IF_ERROR(r.Str(&info.op, "op name"));
      SLUICE_RETURN_IF_ERROR(r.Str(&info.prefix, "prefix"));
      auto [it, fresh] = by_prefix.try_emplace(info.op + "\n" + info.prefix,
                                               static_cast<int32_t>(log->names.size()));
      if (fresh) log->names.push_back(info);
      name_map[id] = it->second;
    } else if (tag == 'E') {
      uint32_t tid = 0, pid = 0, count = 0;
      SLUICE_RETURN_IF_ERROR(r.Get(&tid, 4, "event block"));
      SLUICE_RETURN_IF_ERROR(r.Get(&pid, 4, "event block"));
      SLUICE_RETURN_IF_ERROR(r.Get(&count, 4, "event block"));
      if ((data.size() - r.pos()) / sizeof(Event) < count) {
        return DataLossError("profiler event file '" + path + "': event block of " +
                             std::to_string(count) + " events truncated at offset " +
                             std::to_string(at));
      }
      const int32_t t = thread_index(pid, tid);
      const size_t first = log->events.size();
      for (uint32_t i = 0; i < count; ++i) {
        LoadedEvent le;
        SLUICE_RETURN_IF_ERROR(r.Get(&le.e, sizeof(Event), "event"));
        le.thread = t;
        log->events.push_back(le);
      }
      event_ranges.emplace_back(first, log->events.size());
    } else if (tag == 'M') {
      std::string note;
      SLUICE_RETURN_IF_ERROR(r.Str(&note, "note"));
      log->notes.push_back(note);
    } else {
      return DataLossError("profiler event file '" + path + "': unknown record tag " +
                           std::to_string(static_cast<int>(static_cast<uint8_t>(tag))) +
                           " at offset " + std::to_string(at));
    }
  }
  for (const auto& [first, last] : event_ranges) {
    for (size_t i = first; i < last; ++i) {
      int32_t& name = log->events[i].e.name;
      auto it = name_map.find(name);
      name = it == name_map.end() ? -1 : it->second;
    }
  }
  return Status::OK();
}

}  // namespace sluice::profiler
