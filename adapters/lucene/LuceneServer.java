// Apache Lucene's HNSW vector search behind a small binary protocol on 127.0.0.1, for
// `ragdbeval bench --db lucene`. Started by scripts/servers/lucene.sh; the Rust side is
// adapters/lucene/wire.rs.
//
// One request, one answer, on a persistent connection (one thread per connection):
//   request  u8 op | u32 length | payload
//   answer   u8 status (0 ok, 1 error) | u32 length | payload (an error: its UTF-8 message)
// Numbers are little-endian; a string is u16 length + UTF-8. The operations and their payloads
// are listed in `Op` below.
//
// A collection is one Lucene index in <data>/<name>: documents hold the point id (a keyword
// term for updates and deletes, a doc value to answer with), the vector (KnnFloatVectorField:
// an HNSW graph per segment) and the point's attributes (keywords as StringField, integers as
// LongPoint), which a filtered search turns into the KNN query's filter. Writes after the bulk
// load refresh the searcher before they are acknowledged, so an acknowledged write is visible.

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.KnnVectorsWriter;
import org.apache.lucene.codecs.lucene99.Lucene99Codec;
import org.apache.lucene.codecs.lucene99.Lucene99HnswScalarQuantizedVectorsFormat;
import org.apache.lucene.codecs.lucene99.Lucene99HnswVectorsFormat;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.SegmentReadState;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.store.NRTCachingDirectory;
import org.apache.lucene.util.Version;

public final class LuceneServer {
  /** The operations; each comment gives the request payload, then the answer's. */
  static final class Op {
    /** (nothing) -> UTF-8 JSON: Lucene's and Java's versions. */
    static final int HELLO = 1;
    /** name, u8 similarity (0 euclidean, 1 cosine, 2 max inner product), u8 int8, u32 dim,
     *  u32 m, u32 ef_construction, u32 ram_buffer_mb, u8 recreate, u16 fields, per field:
     *  name, u8 kind (0 keyword, 1 integer) -> nothing. */
    static final int CREATE = 2;
    /** name, u8 upsert, u32 n, per point: u64 id, f32[dim], per field: u8 present, then a
     *  string or an i64 -> nothing. */
    static final int WRITE = 3;
    /** name, u32 n, u64[n] ids -> nothing. */
    static final int DELETE = 4;
    /** name, u32 merge_to (0: keep the segments) -> u64 documents, u32 segments. */
    static final int READY = 5;
    /** name, u32 k, u32 ef, f32[dim], u16 conditions, per condition: u8 kind, field, then
     *  (equals) a string or (range) i64 gte, i64 lt -> u32 n, n x (u64 id, f32 score). */
    static final int SEARCH = 6;
    /** name -> UTF-8 JSON: documents, segments, bytes per file extension. */
    static final int STATS = 7;
    /** name -> nothing: the collection closed and its files removed. */
    static final int DROP = 8;
  }

  static final String VECTOR = "vector";
  static final String ID = "id";

  /** An open collection: its writer, the searchers it refreshes, its shape. */
  static final class Collection {
    final Path dir;
    final int dim;
    final IndexWriter writer;
    final SearcherManager searchers;
    final Map<String, Integer> fields;
    final VectorSimilarityFunction similarity;

    Collection(Path dir, int dim, IndexWriter writer, Map<String, Integer> fields,
        VectorSimilarityFunction similarity) throws IOException {
      this.dir = dir;
      this.dim = dim;
      this.writer = writer;
      this.searchers = new SearcherManager(writer, null);
      this.fields = fields;
      this.similarity = similarity;
    }

    void close() throws IOException {
      searchers.close();
      writer.close();
    }
  }

  /** The codec's HNSW format with a higher dimension limit than Lucene's default 1024. */
  static final class WideVectorsFormat extends KnnVectorsFormat {
    private final KnnVectorsFormat delegate;

    WideVectorsFormat(KnnVectorsFormat delegate) {
      super(delegate.getName());
      this.delegate = delegate;
    }

    @Override
    public KnnVectorsWriter fieldsWriter(SegmentWriteState state) throws IOException {
      return delegate.fieldsWriter(state);
    }

    @Override
    public KnnVectorsReader fieldsReader(SegmentReadState state) throws IOException {
      return delegate.fieldsReader(state);
    }

    @Override
    public int getMaxDimensions(String field) {
      return 4096;
    }
  }

  final Path data;
  final Map<String, Collection> collections = new ConcurrentHashMap<>();

  LuceneServer(Path data) {
    this.data = data;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: LuceneServer PORT DATA_DIR");
      System.exit(2);
    }
    LuceneServer server = new LuceneServer(Paths.get(args[1]));
    Files.createDirectories(server.data);
    try (ServerSocket socket =
        new ServerSocket(Integer.parseInt(args[0]), 128, InetAddress.getByName("127.0.0.1"))) {
      System.err.println("lucene " + Version.LATEST + " listening on 127.0.0.1:" + args[0]);
      while (true) {
        Socket client = socket.accept();
        client.setTcpNoDelay(true);
        Thread t = new Thread(() -> server.serve(client));
        t.setDaemon(true);
        t.start();
      }
    }
  }

  /** Answers one connection's requests until it closes. */
  void serve(Socket client) {
    try (client;
        DataInputStream in = new DataInputStream(new BufferedInputStream(client.getInputStream(), 1 << 16));
        OutputStream out = new BufferedOutputStream(client.getOutputStream(), 1 << 16)) {
      byte[] header = new byte[5];
      while (true) {
        try {
          in.readFully(header);
        } catch (java.io.EOFException closed) {
          return;
        }
        ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
        int op = h.get() & 0xff;
        int length = h.getInt();
        byte[] payload = new byte[length];
        in.readFully(payload);
        ByteBuffer request = ByteBuffer.wrap(payload).order(ByteOrder.LITTLE_ENDIAN);
        Answer answer = new Answer();
        byte status = 0;
        try {
          handle(op, request, answer);
        } catch (Throwable e) {
          // Any failure, an Error too, is answered: the client never waits on a dead thread.
          status = 1;
          answer = new Answer();
          String message = e.getClass().getSimpleName() + ": " + e.getMessage();
          answer.bytes(message.getBytes(StandardCharsets.UTF_8));
        }
        ByteBuffer head = ByteBuffer.allocate(5).order(ByteOrder.LITTLE_ENDIAN);
        head.put(status).putInt(answer.length());
        out.write(head.array());
        answer.writeTo(out);
        out.flush();
      }
    } catch (IOException e) {
      // The client went away mid-request: nothing to answer.
    }
  }

  void handle(int op, ByteBuffer in, Answer out) throws Exception {
    switch (op) {
      case Op.HELLO -> out.bytes(json(Map.of(
          "lucene", Version.LATEST.toString(),
          "java", System.getProperty("java.version"))));
      case Op.CREATE -> create(in);
      case Op.WRITE -> write(in);
      case Op.DELETE -> delete(in);
      case Op.READY -> ready(in, out);
      case Op.SEARCH -> search(in, out);
      case Op.STATS -> out.bytes(json(stats(collection(string(in)))));
      case Op.DROP -> drop(string(in));
      default -> throw new IllegalArgumentException("unknown operation " + op);
    }
  }

  Collection collection(String name) {
    Collection c = collections.get(name);
    if (c == null) {
      throw new IllegalStateException("no collection " + name + ": create it first");
    }
    return c;
  }

  void create(ByteBuffer in) throws IOException {
    String name = string(in);
    checkName(name);
    VectorSimilarityFunction similarity = switch (in.get()) {
      case 0 -> VectorSimilarityFunction.EUCLIDEAN;
      case 1 -> VectorSimilarityFunction.COSINE;
      case 2 -> VectorSimilarityFunction.MAXIMUM_INNER_PRODUCT;
      default -> throw new IllegalArgumentException("unknown similarity");
    };
    boolean int8 = in.get() != 0;
    int dim = in.getInt();
    int m = in.getInt();
    int efConstruction = in.getInt();
    int ramBufferMb = in.getInt();
    boolean recreate = in.get() != 0;
    // In the order the client sends each point's attributes.
    Map<String, Integer> fields = new java.util.LinkedHashMap<>();
    int nfields = Short.toUnsignedInt(in.getShort());
    for (int i = 0; i < nfields; i++) {
      fields.put(string(in), (int) in.get());
    }
    Path dir = data.resolve(name);
    synchronized (this) {
      if (collections.containsKey(name) || Files.exists(dir)) {
        if (!recreate) {
          throw new IllegalStateException("collection " + name + " exists; use --recreate to replace it");
        }
        drop(name);
      }
      KnnVectorsFormat hnsw = int8
          ? new Lucene99HnswScalarQuantizedVectorsFormat(m, efConstruction)
          : new Lucene99HnswVectorsFormat(m, efConstruction);
      KnnVectorsFormat format = new WideVectorsFormat(hnsw);
      IndexWriterConfig config = new IndexWriterConfig()
          .setCodec(new Lucene99Codec() {
            @Override
            public KnnVectorsFormat getKnnVectorsFormatForField(String field) {
              return format;
            }
          })
          .setRAMBufferSizeMB(ramBufferMb)
          // Separate files per segment, never a compound file: the graph's size stays visible.
          .setUseCompoundFile(false)
          .setMergePolicy(noCompoundFiles())
          .setOpenMode(IndexWriterConfig.OpenMode.CREATE);
      // Small segments that a write's refresh flushes stay in memory until a merge or the
      // commit writes them (Solr's default directory does the same): a stream of single-point
      // writes, each visible before it is acknowledged, does not write a segment each.
      NRTCachingDirectory directory = new NRTCachingDirectory(FSDirectory.open(dir), 8.0, 64.0);
      IndexWriter writer = new IndexWriter(directory, config);
      collections.put(name, new Collection(dir, dim, writer, fields, similarity));
    }
  }

  static org.apache.lucene.index.MergePolicy noCompoundFiles() {
    org.apache.lucene.index.TieredMergePolicy policy = new org.apache.lucene.index.TieredMergePolicy();
    policy.setNoCFSRatio(0.0);
    return policy;
  }

  void write(ByteBuffer in) throws IOException {
    Collection c = collection(string(in));
    boolean upsert = in.get() != 0;
    int n = in.getInt();
    List<Document> docs = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      long id = in.getLong();
      float[] vector = new float[c.dim];
      in.asFloatBuffer().get(vector);
      in.position(in.position() + 4 * c.dim);
      Document doc = new Document();
      doc.add(new StringField(ID, Long.toString(id), Field.Store.NO));
      doc.add(new NumericDocValuesField(ID, id));
      doc.add(new KnnFloatVectorField(VECTOR, vector, c.similarity));
      for (Map.Entry<String, Integer> field : c.fields.entrySet()) {
        if (in.get() == 0) {
          continue;
        }
        if (field.getValue() == 0) {
          doc.add(new StringField(field.getKey(), string(in), Field.Store.NO));
        } else {
          doc.add(new LongPoint(field.getKey(), in.getLong()));
        }
      }
      docs.add(doc);
    }
    if (upsert) {
      for (Document doc : docs) {
        c.writer.updateDocument(new Term(ID, doc.get(ID)), doc);
      }
      c.searchers.maybeRefreshBlocking();
    } else {
      c.writer.addDocuments(docs);
    }
  }

  void delete(ByteBuffer in) throws IOException {
    Collection c = collection(string(in));
    int n = in.getInt();
    Term[] terms = new Term[n];
    for (int i = 0; i < n; i++) {
      terms[i] = new Term(ID, Long.toString(in.getLong()));
    }
    c.writer.deleteDocuments(terms);
    c.searchers.maybeRefreshBlocking();
  }

  void ready(ByteBuffer in, Answer out) throws IOException {
    Collection c = collection(string(in));
    int mergeTo = in.getInt();
    if (mergeTo > 0) {
      c.writer.forceMerge(mergeTo);
    }
    c.writer.commit();
    c.searchers.maybeRefreshBlocking();
    IndexSearcher searcher = c.searchers.acquire();
    try {
      out.u64(searcher.getIndexReader().numDocs());
      out.u32(searcher.getIndexReader().leaves().size());
    } finally {
      c.searchers.release(searcher);
    }
  }

  void search(ByteBuffer in, Answer out) throws IOException {
    Collection c = collection(string(in));
    int k = in.getInt();
    int ef = in.getInt();
    float[] vector = vector(in, c.dim);
    Query filter = filter(in, c);
    IndexSearcher searcher = c.searchers.acquire();
    try {
      ScoreDoc[] hits = knn(searcher, vector, k, ef, filter).scoreDocs;
      out.u32(hits.length);
      List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
      for (ScoreDoc hit : hits) {
        out.u64(pointId(leaves, hit.doc));
        out.f32(hit.score);
      }
    } finally {
      c.searchers.release(searcher);
    }
  }

  /** The top `k` of an HNSW search with a candidate list of `ef` (at least k). */
  static TopDocs knn(IndexSearcher searcher, float[] vector, int k, int ef, Query filter)
      throws IOException {
    return searcher.search(new KnnFloatVectorQuery(VECTOR, vector, Math.max(k, ef), filter), k);
  }

  static long pointId(List<LeafReaderContext> leaves, int doc) throws IOException {
    LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(doc, leaves));
    NumericDocValues ids = leaf.reader().getNumericDocValues(ID);
    if (ids == null || !ids.advanceExact(doc - leaf.docBase)) {
      throw new IllegalStateException("document " + doc + " has no point id");
    }
    return ids.longValue();
  }

  static float[] vector(ByteBuffer in, int dim) {
    if (in.remaining() < 4 * dim) {
      throw new IllegalArgumentException("a query of dimension " + dim + " is " + 4 * dim + " bytes");
    }
    float[] vector = new float[dim];
    in.asFloatBuffer().get(vector);
    in.position(in.position() + 4 * dim);
    return vector;
  }

  /** Every condition of the predicate as a FILTER clause; none: no filter. */
  static Query filter(ByteBuffer in, Collection c) {
    int n = Short.toUnsignedInt(in.getShort());
    if (n == 0) {
      return null;
    }
    BooleanQuery.Builder all = new BooleanQuery.Builder();
    for (int i = 0; i < n; i++) {
      int kind = in.get();
      String field = string(in);
      if (!c.fields.containsKey(field)) {
        throw new IllegalArgumentException("the collection has no attribute " + field);
      }
      Query condition = kind == 0
          ? new TermQuery(new Term(field, string(in)))
          : rangeQuery(field, in.getLong(), in.getLong());
      all.add(condition, BooleanClause.Occur.FILTER);
    }
    return all.build();
  }

  /** `gte <= field < lt`; an empty range matches nothing. */
  static Query rangeQuery(String field, long gte, long lt) {
    return lt <= gte
        ? LongPoint.newSetQuery(field)
        : LongPoint.newRangeQuery(field, gte, lt - 1);
  }

  Map<String, Object> stats(Collection c) throws IOException {
    Map<String, Object> stats = new TreeMap<>();
    IndexSearcher searcher = c.searchers.acquire();
    try {
      stats.put("documents", searcher.getIndexReader().numDocs());
      stats.put("segments", searcher.getIndexReader().leaves().size());
    } finally {
      c.searchers.release(searcher);
    }
    Map<String, Long> bytes = new TreeMap<>();
    // The directory's own listing: a segment still cached in memory is part of the index.
    org.apache.lucene.store.Directory directory = c.writer.getDirectory();
    for (String name : directory.listAll()) {
      String ext = name.contains(".") ? name.substring(name.lastIndexOf('.') + 1) : name;
      try {
        bytes.merge(ext, directory.fileLength(name), Long::sum);
      } catch (java.nio.file.NoSuchFileException | java.io.FileNotFoundException gone) {
        // Deleted by a merge between the listing and this look: no longer part of the index.
      }
    }
    stats.put("bytes", bytes);
    return stats;
  }

  void drop(String name) throws IOException {
    Collection c = collections.remove(name);
    if (c != null) {
      c.close();
    }
    Path dir = data.resolve(name);
    if (Files.exists(dir)) {
      try (Stream<Path> walk = Files.walk(dir)) {
        for (Path p : (Iterable<Path>) walk.sorted(Comparator.reverseOrder())::iterator) {
          Files.delete(p);
        }
      }
    }
  }

  static void checkName(String name) {
    if (name.isEmpty() || name.startsWith(".") || name.contains("/") || name.contains("\\")) {
      throw new IllegalArgumentException("collection name `" + name + "`: no path, please");
    }
  }

  static String string(ByteBuffer in) {
    int n = Short.toUnsignedInt(in.getShort());
    byte[] b = new byte[n];
    in.get(b);
    return new String(b, StandardCharsets.UTF_8);
  }

  /** A flat JSON object of strings, numbers and nested maps (enough for HELLO and STATS). */
  static byte[] json(Map<String, ?> map) {
    StringBuilder s = new StringBuilder();
    appendJson(s, map);
    return s.toString().getBytes(StandardCharsets.UTF_8);
  }

  static void appendJson(StringBuilder s, Object value) {
    if (value instanceof Map<?, ?> map) {
      s.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : map.entrySet()) {
        if (!first) {
          s.append(',');
        }
        first = false;
        appendJson(s, e.getKey().toString());
        s.append(':');
        appendJson(s, e.getValue());
      }
      s.append('}');
    } else if (value instanceof Number) {
      s.append(value);
    } else {
      s.append('"');
      for (char ch : value.toString().toCharArray()) {
        if (ch == '"' || ch == '\\') {
          s.append('\\');
        }
        s.append(ch < 0x20 ? ' ' : ch);
      }
      s.append('"');
    }
  }

  /** An answer's payload as it is built. */
  static final class Answer {
    private ByteBuffer buf = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);

    private void room(int n) {
      if (buf.remaining() < n) {
        ByteBuffer bigger = ByteBuffer.allocate(Math.max(buf.capacity() * 2, buf.position() + n))
            .order(ByteOrder.LITTLE_ENDIAN);
        buf.flip();
        bigger.put(buf);
        buf = bigger;
      }
    }

    void u32(int v) {
      room(4);
      buf.putInt(v);
    }

    void u64(long v) {
      room(8);
      buf.putLong(v);
    }

    void f32(float v) {
      room(4);
      buf.putFloat(v);
    }

    void bytes(byte[] b) {
      room(b.length);
      buf.put(b);
    }

    int length() {
      return buf.position();
    }

    void writeTo(OutputStream out) throws IOException {
      out.write(buf.array(), 0, buf.position());
    }
  }
}
