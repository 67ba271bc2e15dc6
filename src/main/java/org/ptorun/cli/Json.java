package org.ptorun.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.io.UncheckedIOException;

/** The commands' --json output: one indented JSON document (Jackson), then a newline. */
final class Json {

    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private Json() {
    }

    static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    static void print(PrintWriter out, JsonNode document) {
        try {
            out.println(MAPPER.writeValueAsString(document));
            out.flush();
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }
}
