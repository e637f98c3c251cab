#include "runs/run_context.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "common/allocator.h"

namespace batchscope {
namespace {

struct DigestFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Digest = std::unique_ptr<EVP_MD_CTX, DigestFree>;

std::string hex_of(const unsigned char* d, unsigned n) {
  static const char* k = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (unsigned i = 0; i < n; ++i) {
    out.push_back(k[d[i] >> 4]);
    out.push_back(k[d[i] & 15]);
  }
  return out;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

}  // namespace

std::string sha256_hex(const void* bytes, size_t size) {
  Digest c(EVP_MD_CTX_new());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestInit_ex(c.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(c.get(), bytes, size);
  EVP_DigestFinal_ex(c.get(), out, &n);
  return hex_of(out, n);
}

Expected<FileFacts> file_facts(const std::string& path) {
  std::error_code ec;
  FileFacts f;
  f.path = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) f.path = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("cannot read " + path + " to fingerprint it");
  Digest c(EVP_MD_CTX_new());
  EVP_DigestInit_ex(c.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = in.gcount();
    if (got <= 0) break;
    EVP_DigestUpdate(c.get(), buf.data(), static_cast<size_t>(got));
    f.size += static_cast<uint64_t>(got);
  }
  if (in.bad()) return invalid_argument("cannot read " + path + " to fingerprint it");
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(c.get(), out, &n);
  f.sha256 = hex_of(out, n);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    const std::time_t t = st.st_mtime;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    f.modified = text;
  }
  return f;
}

std::string machine_json() {
  nlohmann::json j;
  j["cpu"] = cpu_model();
  j["cores"] = std::thread::hardware_concurrency();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) j["host"] = host;
  utsname u{};
  if (uname(&u) == 0) j["kernel"] = std::string(u.sysname) + " " + u.release;
  j["allocator"] = allocator_name();
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string file_facts_json(const FileFacts& f) {
  nlohmann::json j;
  j["path"] = f.path;
  j["size"] = f.size;
  j["sha256"] = f.sha256;
  j["modified"] = f.modified;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace batchscope
