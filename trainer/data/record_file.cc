#include "trainer/data/record_file.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace shard::trainer::data {
namespace {

constexpr char kMagic[8] = {'S', 'H', 'R', 'D', 'R', 'E', 'C', '1'};
constexpr uint64_t kCrcBytes = 4;

uint32_t Crc32(const uint8_t* data, size_t size) {
  return static_cast<uint32_t>(
      crc32(crc32(0, nullptr, 0), data, static_cast<uInt>(size)));
}

template <typename T>
void Put(uint8_t* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<uint8_t>(value >> (8 * i));
  }
}

template <typename T>
T Get(const uint8_t* in) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(in[i]) << (8 * i);
  }
  return value;
}

void EncodeHeader(const RecordHeader& h, uint8_t* out) {
  std::memset(out, 0, kRecordHeaderBytes);
  std::memcpy(out, kMagic, sizeof(kMagic));
  Put<uint32_t>(out + 8, kRecordFormatVersion);
  Put<uint32_t>(out + 12, h.record_size);
  Put<uint64_t>(out + 16, h.record_count);
  Put<uint64_t>(out + 24, h.first_index);
  Put<uint64_t>(out + 32, h.total_records);
  Put<uint32_t>(out + 40, h.rows);
  Put<uint32_t>(out + 44, h.cols);
  Put<uint32_t>(out + 48, h.shard_index);
  Put<uint32_t>(out + 52, h.shard_count);
  Put<uint32_t>(out + 60, Crc32(out, 60));
}

absl::Status Damaged(const std::string& path, uint64_t offset,
                     absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat(path, ": offset ", offset, ": ", what));
}

absl::Status ErrnoError(const std::string& path, absl::string_view action) {
  const int error = errno;
  std::string message =
      absl::StrCat(path, ": ", action, ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  return absl::UnavailableError(message);
}

absl::StatusOr<RecordHeader> DecodeHeader(const std::string& path,
                                          const uint8_t* in) {
  if (std::memcmp(in, kMagic, sizeof(kMagic)) != 0) {
    return Damaged(path, 0, "not a record file (bad magic)");
  }
  if (Get<uint32_t>(in + 60) != Crc32(in, 60)) {
    return Damaged(path, 60, "header checksum mismatch");
  }
  const uint32_t version = Get<uint32_t>(in + 8);
  if (version != kRecordFormatVersion) {
    return Damaged(
        path, 8,
        absl::StrCat("format version ", version, " is not supported (expected ",
                     kRecordFormatVersion, ")"));
  }
  RecordHeader h;
  h.record_size = Get<uint32_t>(in + 12);
  h.record_count = Get<uint64_t>(in + 16);
  h.first_index = Get<uint64_t>(in + 24);
  h.total_records = Get<uint64_t>(in + 32);
  h.rows = Get<uint32_t>(in + 40);
  h.cols = Get<uint32_t>(in + 44);
  h.shard_index = Get<uint32_t>(in + 48);
  h.shard_count = Get<uint32_t>(in + 52);
  if (h.record_size == 0 || h.record_size > kMaxRecordSize) {
    return Damaged(path, 12,
                   absl::StrCat("record size ", h.record_size,
                                " is outside 1 .. ", kMaxRecordSize));
  }
  if (h.first_index > h.total_records ||
      h.record_count > h.total_records - h.first_index) {
    return Damaged(
        path, 16,
        absl::StrCat("records ", h.first_index, " + ", h.record_count,
                     " exceed the dataset's ", h.total_records));
  }
  if (h.rows * uint64_t{h.cols} + (h.rows > 0 ? 1 : 0) >
      uint64_t{h.record_size}) {
    return Damaged(
        path, 40,
        absl::StrCat(h.rows, "x", h.cols, " images do not fit records of ",
                     h.record_size, " bytes"));
  }
  if (h.shard_count == 0 || h.shard_index >= h.shard_count) {
    return Damaged(
        path, 48, absl::StrCat("shard ", h.shard_index, " of ", h.shard_count));
  }
  return h;
}

}  // namespace

uint64_t RecordFileBytes(const RecordHeader& header) {
  return kRecordHeaderBytes +
         header.record_count * (uint64_t{header.record_size} + kCrcBytes);
}

std::string RecordShardName(uint32_t index, uint32_t count) {
  return absl::StrFormat("part-%05u-of-%05u.rec", index, count);
}

// ---- RecordFile ----

absl::StatusOr<RecordFile> RecordFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, "open");
  RecordFile file(path, fd, {});
  uint8_t header[kRecordHeaderBytes];
  const ssize_t got = ::pread(fd, header, sizeof(header), 0);
  if (got < 0) return ErrnoError(path, "read");
  if (static_cast<size_t>(got) < sizeof(header)) {
    return Damaged(path, static_cast<uint64_t>(got),
                   absl::StrCat("truncated header (", got, " of ",
                                kRecordHeaderBytes, " bytes)"));
  }
  absl::StatusOr<RecordHeader> decoded = DecodeHeader(path, header);
  if (!decoded.ok()) return decoded.status();
  file.header_ = *decoded;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0) return ErrnoError(path, "seek");
  const uint64_t expected = RecordFileBytes(file.header_);
  if (static_cast<uint64_t>(size) != expected) {
    return Damaged(
        path, std::min<uint64_t>(size, expected),
        absl::StrCat(static_cast<uint64_t>(size) < expected ? "truncated"
                                                            : "trailing bytes",
                     ": the file has ", size, " bytes, its header (",
                     file.header_.record_count, " records of ",
                     file.header_.record_size, " bytes) says ", expected));
  }
  return file;
}

RecordFile::RecordFile(RecordFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), header_(other.header_) {
  other.fd_ = -1;
}

RecordFile& RecordFile::operator=(RecordFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    header_ = other.header_;
    other.fd_ = -1;
  }
  return *this;
}

RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status RecordFile::Read(uint64_t local_index,
                              absl::Span<uint8_t> out) const {
  if (local_index >= header_.record_count) {
    return absl::OutOfRangeError(absl::StrCat(path_, ": record ", local_index,
                                              " of ", header_.record_count));
  }
  if (out.size() != header_.record_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": a read of ", out.size(),
                     " bytes from records of ", header_.record_size));
  }
  const uint64_t offset =
      kRecordHeaderBytes +
      local_index * (uint64_t{header_.record_size} + kCrcBytes);
  // Payload and checksum in one system call (the file's size was checked
  // at Open, so a short read means the file changed under us).
  uint8_t crc[kCrcBytes];
  iovec parts[2] = {{out.data(), out.size()}, {crc, sizeof(crc)}};
  const size_t wanted = out.size() + sizeof(crc);
  ssize_t got;
  do {
    got = ::preadv(fd_, parts, 2, static_cast<off_t>(offset));
  } while (got < 0 && errno == EINTR);
  if (got < 0) return ErrnoError(path_, "read");
  if (static_cast<size_t>(got) != wanted) {
    return Damaged(path_, offset + static_cast<uint64_t>(got),
                   "unexpected end");
  }
  if (Get<uint32_t>(crc) != Crc32(out.data(), out.size())) {
    return Damaged(
        path_, offset,
        absl::StrCat("record ", local_index, " (global ",
                     header_.first_index + local_index, ") checksum mismatch"));
  }
  return absl::OkStatus();
}

// ---- RecordSet ----

RecordSet::RecordSet(std::vector<RecordFile> files,
                     std::vector<uint64_t> starts)
    : files_(std::move(files)), starts_(std::move(starts)) {
  total_records_ = starts_.back() + files_.back().header().record_count;
}

absl::StatusOr<RecordSet> RecordSet::Open(const std::string& path) {
  std::error_code error;
  std::vector<std::string> paths;
  if (std::filesystem::is_directory(path, error)) {
    for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
      if (entry.path().extension() == ".rec") paths.push_back(entry.path());
    }
    if (error) {
      return absl::UnavailableError(
          absl::StrCat(path, ": cannot list: ", error.message()));
    }
    if (paths.empty()) {
      return absl::NotFoundError(absl::StrCat(path, ": no *.rec files"));
    }
  } else {
    paths.push_back(path);
  }
  std::vector<RecordFile> files;
  for (const std::string& p : paths) {
    absl::StatusOr<RecordFile> file = RecordFile::Open(p);
    if (!file.ok()) return file.status();
    files.push_back(*std::move(file));
  }
  std::sort(files.begin(), files.end(),
            [](const RecordFile& a, const RecordFile& b) {
              return a.header().first_index < b.header().first_index;
            });
  const RecordHeader& first = files.front().header();
  uint64_t next = 0;
  for (const RecordFile& file : files) {
    const RecordHeader& h = file.header();
    if (h.record_size != first.record_size || h.rows != first.rows ||
        h.cols != first.cols || h.total_records != first.total_records) {
      return absl::FailedPreconditionError(
          absl::StrCat(file.path(),
                       ": record size, image shape or dataset size differ "
                       "from ",
                       files.front().path()));
    }
    if (h.first_index != next) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": records ", next, " .. ", h.first_index,
                       " are missing or repeated (", file.path(), " starts at ",
                       h.first_index, ")"));
    }
    next += h.record_count;
  }
  if (next != first.total_records) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": the files hold ", next, " of ",
                     first.total_records, " records"));
  }
  std::vector<uint64_t> starts;
  for (const RecordFile& file : files) {
    starts.push_back(file.header().first_index);
  }
  return RecordSet(std::move(files), std::move(starts));
}

absl::StatusOr<RecordSet> RecordSet::Concat(std::vector<RecordSet> sets) {
  if (sets.empty()) {
    return absl::InvalidArgumentError("no record sets to concatenate");
  }
  // Copies: the files are moved out of the sets below.
  const RecordHeader model = sets.front().files_.front().header();
  const std::string model_path = sets.front().files_.front().path();
  std::vector<RecordFile> files;
  std::vector<uint64_t> starts;
  uint64_t offset = 0;
  for (RecordSet& set : sets) {
    const RecordHeader& h = set.files_.front().header();
    if (h.record_size != model.record_size || h.rows != model.rows ||
        h.cols != model.cols) {
      return absl::FailedPreconditionError(absl::StrCat(
          set.files_.front().path(),
          ": record size or image shape differ from ", model_path));
    }
    for (size_t i = 0; i < set.files_.size(); ++i) {
      starts.push_back(offset + set.starts_[i]);
      files.push_back(std::move(set.files_[i]));
    }
    offset += set.size();
  }
  return RecordSet(std::move(files), std::move(starts));
}

absl::Status RecordSet::Read(uint64_t index, absl::Span<uint8_t> out) const {
  if (index >= total_records_) {
    return absl::OutOfRangeError(
        absl::StrCat("record ", index, " of ", total_records_));
  }
  // The last file that starts at or before index.
  const size_t k = std::upper_bound(starts_.begin(), starts_.end(), index) -
                   starts_.begin() - 1;
  return files_[k].Read(index - starts_[k], out);
}

// ---- RecordWriter ----

absl::StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Create(
    const std::string& path, const RecordHeader& header) {
  if (header.record_size == 0 || header.record_size > kMaxRecordSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("record size ", header.record_size, " is outside 1 .. ",
                     kMaxRecordSize));
  }
  const std::string partial = path + ".partial";
  const int fd =
      ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(partial, "create");
  std::unique_ptr<RecordWriter> writer(new RecordWriter(path, fd, header));
  writer->buffer_.resize(kRecordHeaderBytes);
  EncodeHeader(header, writer->buffer_.data());
  return writer;
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_) std::remove((path_ + ".partial").c_str());
}

absl::Status RecordWriter::Append(absl::Span<const uint8_t> payload) {
  if (payload.size() != header_.record_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("a record of ", payload.size(), " bytes, expected ",
                     header_.record_size));
  }
  if (appended_ == header_.record_count) {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": more than the ", header_.record_count, " records declared"));
  }
  buffer_.insert(buffer_.end(), payload.begin(), payload.end());
  uint8_t crc[kCrcBytes];
  Put<uint32_t>(crc, Crc32(payload.data(), payload.size()));
  buffer_.insert(buffer_.end(), crc, crc + kCrcBytes);
  ++appended_;
  if (buffer_.size() >= (4u << 20)) return Flush();
  return absl::OkStatus();
}

absl::Status RecordWriter::Flush() {
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t wrote =
        ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) return ErrnoError(path_ + ".partial", "write");
    done += static_cast<size_t>(wrote);
  }
  buffer_.clear();
  return absl::OkStatus();
}

absl::Status RecordWriter::Finish() {
  if (appended_ != header_.record_count) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": ", appended_,
                     " records appended, the header "
                     "declares ",
                     header_.record_count));
  }
  if (absl::Status s = Flush(); !s.ok()) return s;
  const std::string partial = path_ + ".partial";
  if (::fsync(fd_) != 0) return ErrnoError(partial, "fsync");
  ::close(fd_);
  fd_ = -1;
  if (std::rename(partial.c_str(), path_.c_str()) != 0) {
    return ErrnoError(path_, "rename");
  }
  finished_ = true;
  return absl::OkStatus();
}

}  // namespace shard::trainer::data
