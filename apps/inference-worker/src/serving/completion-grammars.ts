import type { InferenceWorkItem } from '@trainyard/contracts';
import { CompiledGrammar, detectToolCallFormat, JsonGrammarCompiler, LoadedModel, toolCallSyntax, ToolCallSyntax } from '@trainyard/engine';
import { grammarSpec, toolCallRequest } from './engine-inputs';

/** What constrains a completion's reply: its tool-call syntax and its grammar, from one compiler per loaded model. */
export class CompletionGrammars {
  private readonly compilers = new WeakMap<LoadedModel, Promise<JsonGrammarCompiler>>();

  /**
   * The tool-call syntax of the model's template when the reply may hold calls: tools given
   * and tool_choice not "none" (the tools are then only described), unless "auto" meets a
   * JSON response_format, whose grammar then decides the reply alone.
   */
  toolSyntax(lm: LoadedModel, item: InferenceWorkItem): ToolCallSyntax | null {
    const { tools, tool_choice, response_format } = item.params;
    if (!tools || tool_choice === 'none' || (tool_choice === 'auto' && response_format.type !== 'text')) return null;
    return toolCallSyntax(lm.chatTemplate ? detectToolCallFormat(lm.chatTemplate.source) : 'none');
  }

  /** The grammar of the tool calls or of the response format; null for free text. */
  async compile(lm: LoadedModel, item: InferenceWorkItem, toolSyntax: ToolCallSyntax | null): Promise<CompiledGrammar | null> {
    const { tools, tool_choice, response_format } = item.params;
    if (!toolSyntax || !tools || tool_choice === 'none') {
      const spec = grammarSpec(response_format);
      return spec ? (await this.compilerFor(lm)).compile(spec) : null;
    }
    return (await this.compilerFor(lm)).compileToolCalls(toolCallRequest(item.params, toolSyntax));
  }

  private compilerFor(lm: LoadedModel): Promise<JsonGrammarCompiler> {
    let compiler = this.compilers.get(lm);
    if (!compiler) {
      compiler = JsonGrammarCompiler.create(lm.tokenizer, lm.eosTokenIds);
      this.compilers.set(lm, compiler);
    }
    return compiler;
  }
}
