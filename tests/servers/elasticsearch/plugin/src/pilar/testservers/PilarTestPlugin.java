package pilar.testservers;

import java.io.IOException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.en.PorterStemFilter;
import org.apache.lucene.analysis.miscellaneous.ASCIIFoldingFilter;
import org.apache.lucene.analysis.pattern.PatternTokenizer;
import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterName;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.elasticsearch.index.analysis.Analysis;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * What pilar's tests need from Elasticsearch and the integ-test distribution
 * on Maven Central lacks (its analysis-common and rest-root modules are not
 * published): the {@code english} analyser (Lucene's EnglishAnalyzer, with the
 * {@code stopwords} and {@code stem_exclusion} settings of the real one), the
 * {@code pattern} tokenizer ({@code pattern} setting; default {@code \\W+}) and
 * the {@code asciifolding} and {@code porter_stem} token filters (Lucene's
 * PatternTokenizer, ASCIIFoldingFilter, PorterStemFilter, as analysis-common
 * builds them), and
 * {@code GET}/{@code HEAD /} (node and version info), which the official
 * clients call to ping and to check the product. Built against the
 * distribution's own lib/ jars by ../start; written for the 9.5 plugin API
 * (getRestHandlers takes a RestHandlersServices record since 9.5).
 */
public class PilarTestPlugin extends Plugin implements AnalysisPlugin, ActionPlugin {

    @Override
    public Map<String, AnalysisModule.AnalysisProvider<AnalyzerProvider<? extends Analyzer>>> getAnalyzers() {
        return Map.of("english", (indexSettings, env, name, settings) -> new English(env, name, settings));
    }

    @Override
    public Map<String, AnalysisModule.AnalysisProvider<TokenizerFactory>> getTokenizers() {
        return Map.of("pattern", (indexSettings, env, name, settings) -> {
            java.util.regex.Pattern pattern = java.util.regex.Pattern.compile(settings.get("pattern", "\\W+"));
            int group = settings.getAsInt("group", -1);
            return TokenizerFactory.newFactory(name, () -> new PatternTokenizer(pattern, group));
        });
    }

    @Override
    public Map<String, AnalysisModule.AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
        return Map.of(
            "asciifolding", (indexSettings, env, name, settings) -> new Filter(name, ASCIIFoldingFilter::new),
            "porter_stem", (indexSettings, env, name, settings) -> new Filter(name, PorterStemFilter::new));
    }

    /** A token filter made by one constructor of Lucene's. */
    static final class Filter implements TokenFilterFactory {
        private final String name;
        private final java.util.function.UnaryOperator<org.apache.lucene.analysis.TokenStream> make;

        Filter(String name, java.util.function.UnaryOperator<org.apache.lucene.analysis.TokenStream> make) {
            this.name = name;
            this.make = make;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public org.apache.lucene.analysis.TokenStream create(org.apache.lucene.analysis.TokenStream in) {
            return make.apply(in);
        }
    }

    @Override
    public Collection<RestHandler> getRestHandlers(RestHandlersServices services,
                                                   Supplier<DiscoveryNodes> nodes,
                                                   Predicate<NodeFeature> features) {
        return List.of(new Root(services.settings()));
    }

    /** The {@code english} analyser: standard tokenizer, possessives, lower case, stop words, Porter stemming. */
    static final class English extends AbstractIndexAnalyzerProvider<EnglishAnalyzer> {
        private final EnglishAnalyzer analyzer;

        English(Environment env, String name, Settings settings) {
            super(name);
            analyzer = new EnglishAnalyzer(
                Analysis.parseStopWords(env, settings, EnglishAnalyzer.ENGLISH_STOP_WORDS_SET),
                Analysis.parseStemExclusion(settings, CharArraySet.EMPTY_SET));
        }

        @Override
        public EnglishAnalyzer get() {
            return analyzer;
        }
    }

    /** {@code GET /} and {@code HEAD /}: the node's name, cluster and version, as rest-root answers. */
    static final class Root extends BaseRestHandler {
        private final Settings settings;

        Root(Settings settings) {
            this.settings = settings;
        }

        @Override
        public String getName() {
            return "pilar_test_root";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
        }

        @Override
        protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) throws IOException {
            return channel -> {
                Build build = Build.current();
                XContentBuilder b = channel.newBuilder();
                b.startObject()
                    .field("name", Node.NODE_NAME_SETTING.get(settings))
                    .field("cluster_name", ClusterName.CLUSTER_NAME_SETTING.get(settings).value())
                    .field("cluster_uuid", "_na_")
                    .startObject("version")
                    .field("number", build.qualifiedVersion())
                    .field("build_flavor", build.flavor())
                    .field("build_type", build.type().displayName())
                    .field("build_hash", build.hash())
                    .field("build_date", build.date())
                    .field("build_snapshot", build.isSnapshot())
                    .field("lucene_version", org.apache.lucene.util.Version.LATEST.toString())
                    .field("minimum_wire_compatibility_version", build.minWireCompatVersion())
                    .field("minimum_index_compatibility_version", build.minIndexCompatVersion())
                    .endObject()
                    .field("tagline", "You Know, for Search")
                    .endObject();
                channel.sendResponse(new RestResponse(RestStatus.OK, b));
            };
        }
    }
}
