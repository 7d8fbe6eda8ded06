"""Multilingual benchmarks (XCOPA, Belebele, MMMLU, INCLUDE, KMMLU, ArabicMMLU) and the Taiwanese TMLU.
Each asks by letters as lm-eval's own task does, except XCOPA (option texts, as SuperGLUE's COPA)."""

from __future__ import annotations

from .benchmark import Benchmark
from .registry_commonsense import cloze_note

BELEBELE_LANGUAGES = (
    "acm_Arab", "afr_Latn", "als_Latn", "amh_Ethi", "apc_Arab", "arb_Arab", "arb_Latn", "ars_Arab", "ary_Arab",
    "arz_Arab", "asm_Beng", "azj_Latn", "bam_Latn", "ben_Beng", "ben_Latn", "bod_Tibt", "bul_Cyrl", "cat_Latn",
    "ceb_Latn", "ces_Latn", "ckb_Arab", "dan_Latn", "deu_Latn", "ell_Grek", "eng_Latn", "est_Latn", "eus_Latn",
    "fin_Latn", "fra_Latn", "fuv_Latn", "gaz_Latn", "grn_Latn", "guj_Gujr", "hat_Latn", "hau_Latn", "heb_Hebr",
    "hin_Deva", "hin_Latn", "hrv_Latn", "hun_Latn", "hye_Armn", "ibo_Latn", "ilo_Latn", "ind_Latn", "isl_Latn",
    "ita_Latn", "jav_Latn", "jpn_Jpan", "kac_Latn", "kan_Knda", "kat_Geor", "kaz_Cyrl", "kea_Latn", "khk_Cyrl",
    "khm_Khmr", "kin_Latn", "kir_Cyrl", "kor_Hang", "lao_Laoo", "lin_Latn", "lit_Latn", "lug_Latn", "luo_Latn",
    "lvs_Latn", "mal_Mlym", "mar_Deva", "mkd_Cyrl", "mlt_Latn", "mri_Latn", "mya_Mymr", "nld_Latn", "nob_Latn",
    "npi_Deva", "npi_Latn", "nso_Latn", "nya_Latn", "ory_Orya", "pan_Guru", "pbt_Arab", "pes_Arab", "plt_Latn",
    "pol_Latn", "por_Latn", "ron_Latn", "rus_Cyrl", "shn_Mymr", "sin_Latn", "sin_Sinh", "slk_Latn", "slv_Latn",
    "sna_Latn", "snd_Arab", "som_Latn", "sot_Latn", "spa_Latn", "srp_Cyrl", "ssw_Latn", "sun_Latn", "swe_Latn",
    "swh_Latn", "tam_Taml", "tel_Telu", "tgk_Cyrl", "tgl_Latn", "tha_Thai", "tir_Ethi", "tsn_Latn", "tso_Latn",
    "tur_Latn", "ukr_Cyrl", "urd_Arab", "urd_Latn", "uzn_Latn", "vie_Latn", "war_Latn", "wol_Latn", "xho_Latn",
    "yor_Latn", "zho_Hans", "zho_Hant", "zsm_Latn", "zul_Latn")
MMMLU_LANGUAGES = (("ar_xy", "AR_XY", "Arabic"), ("bn_bd", "BN_BD", "Bengali"), ("de_de", "DE_DE", "German"),
                   ("es_la", "ES_LA", "Spanish"), ("fr_fr", "FR_FR", "French"), ("hi_in", "HI_IN", "Hindi"),
                   ("id_id", "ID_ID", "Indonesian"), ("it_it", "IT_IT", "Italian"), ("ja_jp", "JA_JP", "Japanese"),
                   ("ko_kr", "KO_KR", "Korean"), ("pt_br", "PT_BR", "Brazilian Portuguese"),
                   ("sw_ke", "SW_KE", "Swahili"), ("yo_ng", "YO_NG", "Yoruba"),
                   ("zh_cn", "ZH_CN", "Simplified Chinese"))
INCLUDE_LANGUAGES = tuple((name.lower().replace(" ", "_"), name, name) for name in (
    "Albanian", "Arabic", "Armenian", "Azerbaijani", "Basque", "Belarusian", "Bengali", "Bulgarian", "Chinese",
    "Croatian", "Dutch", "Estonian", "Finnish", "French", "Georgian", "German", "Greek", "Hebrew", "Hindi",
    "Hungarian", "Indonesian", "Italian", "Japanese", "Kazakh", "Korean", "Lithuanian", "Malay", "Malayalam",
    "Nepali", "North Macedonian", "Persian", "Polish", "Portuguese", "Russian", "Serbian", "Spanish", "Tagalog",
    "Tamil", "Telugu", "Turkish", "Ukrainian", "Urdu", "Uzbek", "Vietnamese"))
XCOPA_LANGUAGES = ("et", "ht", "id", "it", "qu", "sw", "ta", "th", "tr", "vi", "zh")

MULTILINGUAL = (
    Benchmark("xcopa", "XCOPA, COPA in 11 languages (xcopa:zh)", "cambridgeltl/xcopa", "{variant}",
              group="multilingual", eval_split="test", fewshot_splits=("validation",), layout="hub", description="",
              options="2", language="per variant", license="CC-BY-4.0", variants=XCOPA_LANGUAGES, adapter="copa",
              lm_eval_note=cloze_note("xcopa_<language>"), cloze_task="xcopa_{variant}", cloze_question="{question}"),
    Benchmark("belebele", "Belebele, FLORES passages with a question, 122 languages (belebele:zho_Hant)",
              "facebook/belebele", "{variant}", group="multilingual", eval_split="test", fewshot_splits=("test",),
              layout="hub", description="", strip_question=False, option_format="{letter}: {text}",
              language="per variant", license="CC-BY-SA-4.0", variants=BELEBELE_LANGUAGES, adapter="belebele",
              lm_eval_task="belebele_{variant}"),
    Benchmark("mmmlu", "MMMLU, OpenAI's MMLU test set in 14 languages (mmmlu:ja_jp)", "openai/MMMLU", None,
              group="multilingual", eval_split="test", fewshot_splits=("test",), layout="hub",
              description="The following are multiple choice questions (with answers) about {subject} ({language})."
                          "\n\n", language="per variant", license="MIT",
              variants=tuple(v for v, _, _ in MMMLU_LANGUAGES),
              variant_configs=MMMLU_LANGUAGES, adapter="mmmlu", lm_eval_task="mmmlu_{variant}"),
    Benchmark("include", "INCLUDE, regional exams in 44 languages (include:greek)", "CohereForAI/include-base-44",
              None, group="multilingual", eval_split="test", fewshot_splits=(), layout="hub",
              description="The following is multiple-choice question about {subject}.", language="{variant}",
              option_formats=("{letter}. {text}",) * 3 + (" {letter}. {text}",),  # lm-eval's YAML folds a line
              license="Apache-2.0", variants=tuple(v for v, _, _ in INCLUDE_LANGUAGES),
              variant_configs=INCLUDE_LANGUAGES,
              adapter="include", lm_eval_task="include_base_44_{variant}"),
    Benchmark("kmmlu", "KMMLU, Korean exams, 45 subjects", "HAERAE-HUB/KMMLU", None, group="multilingual",
              eval_split="test", fewshot_splits=("dev",), layout="hub", description="", subject_table="kmmlu",
              answer_cue="정답：", language="ko", license="CC-BY-ND-4.0", subject_configs=True, adapter="kmmlu",
              lm_eval_task="kmmlu"),
    Benchmark("arabicmmlu", "ArabicMMLU, Arabic school and university exams, 40 subjects", "MBZUAI/ArabicMMLU", None,
              group="multilingual", eval_split="test", fewshot_splits=("dev",), layout="hub", description="",
              subject_table="arabicmmlu", question_block="{question}\n{options}\n\n", strip_question=False,
              language="ar", options="2-5", license="CC-BY-NC-4.0", subject_configs=True, adapter="arabicmmlu",
              lm_eval_task="arabicmmlu"),
)
CHINESE = (
    Benchmark("tmlu", "TMLU, Taiwanese exams (AST, CAP, GSAT, ...), 31 subjects", "miulab/tmlu", None,
              group="Chinese and Taiwanese", eval_split="test", fewshot_splits=("dev",), layout="hub", description="",
              subject_table="tmlu", language="zh-Hant", options="4-6", license="not stated", subject_configs=True,
              adapter="tmlu", lm_eval_task="tmlu"),
)
