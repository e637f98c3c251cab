// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/run_context.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "common/sidecar_path.h"

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

std::string model_file_json(const std::string& path) {
  auto f = file_facts(path);
  if (!f)
    return "{\"path\":" +
           nlohmann::json(path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "}";
  nlohmann::json j = nlohmann::json::parse(file_facts_json(*f));
  // The sidecar (NAME.json beside NAME.pt, or in the config folder): the model's inputs, outputs
  // and largest batch as it declares them.
  std::ifstream in(sidecar_path(path));
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    auto meta = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (meta.is_object()) j["metadata"] = std::move(meta);
  }
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
