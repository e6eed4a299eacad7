// The reference for anelm's infill filter: llama.cpp's own sampler chain top_k -> top_p -> infill over
// a given candidate list, with the vocabulary of a GGUF file. Built by llamacpp_infill_sampler_test
// against the peer kit's prebuilt libllama (../shared/peers).
//
// usage: llamacpp_infill_chain MODEL.gguf TOP_K TOP_P < cases
//   each input line is one case: "id:logit id:logit ..."; each output line lists the survivors as
//   "id:p ..." where p is the softmax of the survivors' logits, the distribution llama.cpp's dist
//   sampler then draws from.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user) { (void)level; (void)text; (void)user; }

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL.gguf TOP_K TOP_P < cases\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    static char line[1 << 20];
    static llama_token_data data[1 << 14];
    while (fgets(line, sizeof line, stdin)) {
        size_t n = 0;
        for (char *tok = strtok(line, " \n"); tok && n < sizeof data / sizeof data[0]; tok = strtok(NULL, " \n")) {
            int id;
            float logit;
            if (sscanf(tok, "%d:%f", &id, &logit) != 2) return 3;
            data[n++] = (llama_token_data){id, logit, 0.0f};
        }
        struct llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
        llama_sampler_chain_add(chain, llama_sampler_init_top_k(atoi(argv[2])));
        llama_sampler_chain_add(chain, llama_sampler_init_top_p((float)atof(argv[3]), 1));
        llama_sampler_chain_add(chain, llama_sampler_init_infill(vocab));
        llama_token_data_array cur = {data, n, -1, false};
        llama_sampler_apply(chain, &cur);
        float mx = -INFINITY;
        for (size_t i = 0; i < cur.size; ++i)
            if (cur.data[i].logit > mx) mx = cur.data[i].logit;
        double sum = 0;
        for (size_t i = 0; i < cur.size; ++i) sum += exp((double)cur.data[i].logit - mx);
        for (size_t i = 0; i < cur.size; ++i)
            printf("%s%d:%.9g", i ? " " : "", cur.data[i].id, exp((double)cur.data[i].logit - mx) / sum);
        printf("\n");
        fflush(stdout);
        llama_sampler_free(chain);
    }
    llama_model_free(model);
    return 0;
}
