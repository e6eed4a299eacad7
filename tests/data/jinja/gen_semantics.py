#!/usr/bin/env python3
"""Writes tests/jinja/jinja_semantics_cases.inc: small templates and what jinja2 renders for them
in transformers' chat-template environment (render_hf.py's make_env), or "!Class: message" when
jinja2 raises. Run from the repository root:
  python3 tests/data/jinja/gen_semantics.py /work/shared/models/chat-templates/render_hf.py"""
import datetime, importlib.util, json, sys

spec = importlib.util.spec_from_file_location("render_hf", sys.argv[1])
render_hf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(render_hf)
env = render_hf.make_env(datetime.datetime(2024, 7, 26, 10, 0, 0))

CTX = {"s": "Hello World", "n": 7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 2, "a": 1},
       "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "x": None}],
       "e": [], "nul": None, "t": True, "u": "h\u00e9llo \u00fc \U0001F600", "q": "it's \"q\" \\ <b>&",
       "ws": "  a b\t\n", "nested": {"k": [1, {"z": [True, None, 1.5]}]}, "users": [
           {"name": "bob", "age": 30}, {"name": "Al", "age": 25}, {"name": "cy", "age": 30}]}

CASES = [
    # output and literals
    "{{ 'a' }}{{ \"b\" }}{{ 1 }}{{ 1.0 }}{{ true }}{{ none }}{{ [1, 'x', none, 2.0] }}{{ {'a': 1, 'b': [true]} }}",
    "{{ (1, 2) }}{{ () }}{{ (1,) }}", "{{ 'a' 'b' }}", "{{ 'x\\ny\\t\\u00e9\\x41' }}", "{{ q }}|{{ [q] }}|{{ {'k': q} }}",
    "{{ 1_000 }} {{ 1e3 }} {{ 0.1 }} {{ 1/3 }} {{ 2.0**0.5 }} {{ 1e16 }} {{ 1e-5 }} {{ 123456789012345678 }} {{ 0.1+0.2 }}",
    "{{ -0.0 }} {{ 3.0 * 2 }} {{ 10 / 4 }} {{ 10 // 4 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}",
    "{{ 1 + true }} {{ true + true }} {{ 3 - 1.5 }} {{ 'ab' * 3 }} {{ 2 * 'c' }} {{ [1] * 2 }} {{ [1] + [2] }}",
    "{{ 1 + 'a' }}", "{{ 'a' + 1 }}", "{{ [1] + 'a' }}", "{{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ 1 % 0 }}", "{{ -'a' }}",
    "{{ 'a' ~ 1 ~ none ~ true ~ 1.5 ~ [1] }}", "{{ n ~ undefined_x ~ n }}",
    # comparisons, logic, membership
    "{{ 1 < 2 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 != 2 }} {{ none == none }} {{ 1 == '1' }} {{ true == 1 }}",
    "{{ 1 < 'a' }}", "{{ none < 1 }}",
    "{{ 1 and 2 }} {{ 0 and 2 }} {{ 0 or 'x' }} {{ '' or [] }} {{ not 0 }} {{ not 'a' }} {{ none or 'd' }}",
    "{{ 'a' in 'cat' }} {{ 1 in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ 'hi' in msgs[0].content }} {{ 5 in e }}",
    "{{ 1 in 'abc' }}", "{{ 'a' in 5 }}", "{{ 1 if t else 2 }} {{ 1 if nul else 2 }} {{ 'x' if false }}|",
    # variables, attributes, items
    "{{ d.a }} {{ d['b'] }} {{ msgs[1].role }} {{ msgs[-1]['content'] }} {{ l.0 }} {{ nested.k[1].z[2] }}",
    "{{ d.zz }}|{{ d.zz is defined }}|{{ missing is defined }}|{{ missing }}|", "{{ missing.attr }}", "{{ d.zz.y }}",
    "{{ l[10] }}|{{ l[10] is defined }}", "{{ l[10].x }}", "{{ e[0] }}|", "{{ e[0].content }}", "{{ nul.x }}", "{{ nul[0] }}",
    "{{ s[0] }}{{ s[-1] }}{{ u[1] }}{{ u[-1] }}", "{{ msgs[0].x }}|{{ msgs[1].x }}|{{ msgs[1].x is none }}",
    "{{ missing() }}", "{{ n() }}", "{{ missing + 1 }}", "{{ missing | length }} {{ missing | default('dflt') }} {{ missing is undefined }}",
    "{% for x in missing %}no{% else %}empty{% endfor %}",
    # slicing
    "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[5:] }} {{ l[-10:2] }} {{ s[1:4] }} {{ s[::-1] }} {{ u[1:3] }} {{ s[:] }}",
    "{{ l[::0] }}", "{{ n[1:] }}",
    # loops
    "{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }},{% endfor %}",
    "{% for x in l %}{{ loop.previtem }}-{{ loop.nextitem }}|{{ loop.cycle('a', 'b') }}|{% endfor %}",
    "{% for x in l %}{{ loop.previtem is defined }}{% endfor %}", "{% for x in l %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}",
    "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "{% for k in d %}{{ k }}{% endfor %}", "{% for c in u %}[{{ c }}]{% endfor %}",
    "{% for x in l if x > 1 %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% endfor %}", "{% for x in e %}x{% else %}none{% endfor %}",
    "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}", "{% for a, b in [[1, 2, 3]] %}{% endfor %}",
    "{% for x in l %}{% set y = x %}{% endfor %}{{ y is defined }}", "{% set c = 0 %}{% for x in l %}{% set c = c + x %}{% endfor %}{{ c }}",
    "{% for x in l %}{% for y in l %}{{ loop.index }}{% endfor %}{{ loop.index }};{% endfor %}",
    "{% for x in n %}{% endfor %}", "{% for x in nul %}{% endfor %}", "{{ range(5) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}",
    "{{ range(1, 2, 0) }}", "{{ range(100001) }}", "{{ range('a') }}",
    "{% for x in l %}{{ loop }}{% endfor %}",
    # namespace, set
    "{% set ns = namespace(a=1, b='x') %}{% set ns.a = ns.a + 1 %}{% for x in l %}{% set ns.b = ns.b ~ x %}{% endfor %}{{ ns.a }} {{ ns.b }}",
    "{% set ns = namespace() %}{{ ns.missing }}|{{ ns.missing is defined }}", "{% set ns = namespace(d) %}{{ ns.a }}{{ ns.b }}",
    "{% set x = 1 %}{% set x.y = 2 %}", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", "{% set a, b = [1] %}", "{% set x = 1, 2 %}{{ x }}",
    "{% set t %}inner {{ n }}{% endset %}[{{ t }}]{{ t | length }}", "{% set ns = namespace(x=1) %}{{ ns }}",
    # macros
    "{% macro m(a, b=2, c='c') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ m(1, c=5) }}|{{ m(a=9) }}",
    "{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}", "{% macro f(k) %}{% if k > 0 %}{{ k }}{{ f(k - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
    "{% macro m() %}{{ n }}{% endmacro %}{% set n = 99 %}{{ m() }}", "{% macro m() %}x{% endmacro %}{{ m }}",
    "{% macro m(x) %}{{ x }}{% endmacro %}{{ m('a') ~ m('b') }} {{ m('a') | length }}",
    # filter blocks, raw, comments, whitespace control
    "{% filter upper %}hello {{ s }}{% endfilter %}", "{% filter replace('a', 'b') %}banana{% endfilter %}",
    "{% raw %}{{ not }} {% evaluated %}{% endraw %}", "a {# comment #} b", "a  {{- ' x ' -}}  b", "a\n  {%- if t %} y {% endif -%}  \n b",
    "line1\n    {% if t %}\n    yes\n    {% endif %}\nline2", "  {%+ if t %}x{% endif %}\n", "{% if t +%}\nkeep{% endif %}", "a\n  {# c #}\nb",
    "x {% if t -%}\n\n  y{%- endif %}", "{{ 1 }}\n{{ 2 }}\n", "{% generation %}gen {{ n }}{% endgeneration %}",
    # filters
    "{{ l | length }} {{ s | length }} {{ u | length }} {{ d | length }} {{ l | count }} {{ 'x' | length }}", "{{ n | length }}",
    "{{ s | upper }} {{ s | lower }} {{ 'hello world' | capitalize }} {{ 'hELLO wORLD-x(y)' | title }} {{ u | upper }}",
    "{{ ws | trim }}|{{ 'xxaxx' | trim('x') }}|{{ s | replace('l', 'L') }}|{{ s | replace('l', 'L', 2) }}",
    "{{ l | join(', ') }} {{ l | join }} {{ users | join('-', attribute='name') }} {{ [1, none, 'a'] | join('|') }}",
    "{{ l | first }} {{ l | last }} {{ s | first }} {{ e | first }}| {{ l | min }} {{ l | max }} {{ users | max(attribute='age') }}",
    "{{ l | sort }} {{ l | sort(reverse=true) }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }}",
    "{{ users | sort(attribute='age') | map(attribute='name') | list }} {{ users | sort(attribute='age,name') | map(attribute='name') | list }}",
    "{{ d | dictsort }} {{ d | dictsort(reverse=true) }} {{ {'b': 1, 'a': 2} | dictsort(by='value') }}",
    "{{ [1, 2, 2, 'a', 'A'] | unique | list }} {{ l | reverse | list }} {{ s | reverse }} {{ l | sum }} {{ users | sum(attribute='age') }} {{ [[1], [2]] | sum(start=[]) }}",
    "{{ users | map(attribute='name') | join(',') }} {{ l | map('string') | join('+') }} {{ ['a', 'b'] | map('upper') | list }} {{ users | map(attribute='zz', default='?') | list }}",
    "{{ users | selectattr('age', 'equalto', 30) | map(attribute='name') | list }} {{ users | rejectattr('age', '==', 30) | list }} {{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ [0, 1, '', 'a'] | select | list }}",
    "{{ msgs | selectattr('role', 'eq', 'user') | list | length }} {{ msgs | selectattr('x') | list }} {{ msgs | selectattr('x', 'none') | list | length }}",
    "{{ l | map('nofilter') | list }}", "{{ l | select('notest') | list }}",
    "{{ d | items | list }} {{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }}",
    "{{ missing | items | list }}", "{{ l | items | list }}", "{{ l | list }} {{ s | list }} {{ d | list }}",
    "{{ '42' | int }} {{ '4.7' | int }} {{ 4.7 | int }} {{ 'x' | int }} {{ 'x' | int(5) }} {{ ' 12 ' | int }} {{ '1_0' | int }} {{ true | int }} {{ none | int }}",
    "{{ '4.5' | float }} {{ 3 | float }} {{ 'x' | float }} {{ '1e3' | float }} {{ 'nan' | float }} {{ 'inf' | float }}",
    "{{ 3.7 | round }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 3.1 | round(0, 'ceil') }} {{ 3.9 | round(method='floor') }} {{ 7 | round }} {{ -3 | abs }} {{ -2.5 | abs }}",
    "{{ n | string }} {{ l | string }} {{ nul | string }} {{ 1.0 | string }} {{ s | string | length }}",
    "{{ missing | default('a') }} {{ '' | default('b') }} {{ '' | default('b', true) }} {{ none | default('c') }} {{ none | d('c', true) }} {{ 0 | default(5) }}",
    "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}|{{ 'x\\ny' | indent('> ') }}",
    "{{ '<b>&\"\\'' | e }} {{ q | escape }} {{ '<x>' | safe }} {{ ('<x>' | safe) | escape }} {{ ('<a>' | safe) + '<b>' }}",
    "{{ 'Hello %s, %d!' | format('Bob', 3) }} {{ '%5.2f|%-4s|%03d|%x|%%|%r' | format(3.14159, 'a', 7, 255, 'q') }} {{ '{} and {}'.format(1, 'b') }} {{ '{0}{0}{x}'.format(1, x=2) }}",
    "{{ 'a b  c' | wordcount }} {{ '<p>Hi  <b>there</b></p>' | striptags }} {{ 'hello world foo bar' | truncate(11) }} {{ 'abc' | center(7) }}|",
    "{{ l | batch(2) | list }} {{ l | batch(2, 0) | list }} {{ l | tojson }} {{ d | attr('a') }} {{ d | attr('items') is callable }} {{ 'x' | attr('upper') is defined }}",
    "{{ users | groupby('age') }}|{% for g, items in users | groupby('age') %}{{ g }}:{{ items | length }};{% endfor %}|{% for g in users | groupby('name') %}{{ g.grouper }}{{ g.list | length }}{% endfor %}",
    "{{ '%s has %d items (%.1f%%)' % ('cart', 3, 42.25) }} {{ '%s' % 'one' }} {{ '%r' % [1] }} {{ '%5s|%-5s|' % ('a', 'b') }}", "{{ '%s %s' % ('a',) }}", "{{ 'a' % 2 }}",
    "{{ (1, 2) == [1, 2] }} {{ (1, 2) == (1, 2) }} {{ (1, 2) + (3,) }} {{ [1] + [2] }} {{ (1, 2)[1:] }} {{ (1, 2) | list }} {{ (1, 2) | tojson }} {{ ((1, 2) * 2) }}", "{{ [1] + (2,) }}",
    "{{ l.index(1) }} {{ l.count(3) }} {{ l.copy() }} {{ (1, 2).count(2) }}", "{{ l.index(9) }}", "{{ s._private }}|{{ d._x }}|", "{{ l.append }}|{{ l.append is defined }}|{{ d.update is defined }}",
    "{{ 'caf\u00e9 na\u00efve'.find('na') }} {{ 'caf\u00e9 na\u00efve'.index('\u00ef') }} {{ 'stra\u00dfe' | upper }} {{ '\u0391\u0392\u0393 \u0414\u0416' | lower }} {{ '\u00e9cole \u00e9t\u00e9' | title }} {{ '\u00c9T\u00c9' | capitalize }} {{ '\u00e9' is lower }}",
    "a\r\nb {% if t %}\r\nc{% endif %}\rd\n", "{{ 1 }}\n\n", "x\n", "{% if t %}a{% endif %}\n", "{{ 'a' }}   {% if t %}b{% endif %}", "  {{ 'a' }}\n  {% if t %}b{% endif %}",
    "{% for x in l %}  {{ x }}  {% endfor %}", "{% for x in l -%}\n  {{ x }}\n{%- endfor %}",
    # tojson
    "{{ d | tojson }} {{ nested | tojson }} {{ q | tojson }} {{ u | tojson }} {{ u | tojson(ensure_ascii=true) }} {{ none | tojson }} {{ 1.0 | tojson }} {{ 1e20 | tojson }}",
    "{{ d | tojson(indent=2) }}|{{ nested | tojson(indent=1) }}|{{ e | tojson(indent=2) }}|{{ {} | tojson(indent=2) }}",
    "{{ d | tojson(sort_keys=true) }} {{ d | tojson(separators=(',', ':')) }} {{ d | tojson(indent=2, separators=(', ', ' = ')) }}",
    "{{ {1: 'a', none: 'b', true: 'c', 1.5: 'd'} | tojson }}", "{{ missing | tojson }}", "{{ (l | map('string')) | tojson }}", "{{ 'a\\u0001\\x7f\\u2028' | tojson }}",
    "{{ ('ab' | safe) | tojson }} {{ d | tojson(2) }} {{ [1, [2, [3, {}]]] | tojson(indent=3) }}",
    # tests
    "{{ n is odd }} {{ n is even }} {{ n is divisibleby 7 }} {{ n is divisibleby(2) }} {{ n is number }} {{ f is float }} {{ n is integer }} {{ t is boolean }} {{ t is true }} {{ nul is false }}",
    "{{ s is string }} {{ l is sequence }} {{ d is mapping }} {{ l is iterable }} {{ n is iterable }} {{ d is sequence }} {{ range is callable }} {{ s is lower }} {{ 'ab' is lower }} {{ 'AB' is upper }}",
    "{{ n is == 7 }}", "{{ l | select('==', 1) | list }} {{ l | select('>', 1) | list }}", "{{ n is eq 7 }} {{ n is ne 7 }} {{ n is lt 8 }} {{ n is gt 8 }} {{ n is le 7 }} {{ n is ge 8 }} {{ n is in l }} {{ 1 is in l }} {{ n is sameas 7 }} {{ nul is sameas none }} {{ nul is none }} {{ n is not none }}",
    "{{ 'a' is escaped }} {{ ('a' | e) is escaped }} {{ n is defined and n > 3 }} {{ not n is odd }} {{ (l | map('string')) is iterable }} {{ (l | map('string')) is sequence }}",
    "{{ n is nosuchtest }}", "{{ 1.5 is odd }} {{ 3.0 is odd }} {{ 4.0 is even }} {{ 5.0 is divisibleby 2.5 }}", "{{ 5 is divisibleby 0 }}", "{{ none is odd }}",
    # string methods
    "{{ s.upper() }} {{ s.lower() }} {{ ws.strip() }}|{{ ws.lstrip() }}|{{ ws.rstrip() }}|{{ 'xxhixx'.strip('x') }} {{ s.startswith('He') }} {{ s.endswith(('x', 'ld')) }}",
    "{{ s.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ '  a  b  '.split() }} {{ 'a b c'.split(none, 1) }} {{ 'l1\\nl2\\r\\nl3'.splitlines() }}",
    "{{ s.replace('o', '0') }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('z') }} {{ s.count('l') }} {{ s.index('W') }} {{ '-'.join(['a', 'b']) }} {{ s.title() }} {{ 'aBc'.capitalize() }}",
    "{{ s.index('z') }}", "{{ '-'.join([1, 2]) }}", "{{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'a1'.isalnum() }} {{ ' '.isspace() }} {{ 'ab'.islower() }} {{ 'AB'.isupper() }} {{ ''.isdigit() }}",
    "{{ s.nosuchmethod() }}", "{{ u.upper() }} {{ u.title() }} {{ u | capitalize }}",
    # mutators and the sandbox
    "{{ l.append(4) }}", "{% set x = l.pop() %}", "{{ d.update({'c': 3}) }}", "{{ d.clear() }}", "{{ l.sort() }}", "{{ d.setdefault('a', 1) }}",
    "{{ d.pop('a') }}", "{% set ll = [1] %}{{ ll.extend([2]) }}", "{{ s.__class__ }}|{{ l.__len__ }}|{{ s.__class__ is defined }}", "{{ s.__class__.__name__ }}",
    "{{ d.copy() }}", "{{ raise_exception('boom ' ~ n) }}", "{{ strftime_now('%Y-%m-%d %H:%M %A %B %d') }}",
    "{{ dict(a=1, b=2) }} {{ dict(d, c=3) }} {{ namespace(a=1).a }}",
    # whitespace and syntax errors
    "{% if %}{% endif %}", "{% for x in l %}", "{% endfor %}", "{{ 1 + }}", "{% if t %}a{% else %}b{% else %}c{% endif %}", "{{ 'unterminated }}",
    "{% nosuchtag %}", "{{ l | nosuchfilter }}", "{% if t %}{{ l | nosuchfilter }}{% endif %}", "{% if nul %}{{ l | nosuchfilter }}{% endif %}ok",
    "{% if t %}{% for x in l %}{{ x | nosuchfilter }}{% endfor %}{% endif %}", "{{ 1 if t else (l | nosuchfilter) }}",
]

def render(src):
    try:
        return env.from_string(src).render(**CTX)
    except render_hf.TemplateRaised as e:
        return "!raise_exception: " + str(e)
    except Exception as e:
        return "!" + type(e).__name__ + ": " + str(e)

def cxx(s):
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\": out.append("\\\\")
        elif ch == '"': out.append('\\"')
        elif ch == "\n": out.append("\\n")
        elif ch == "\t": out.append("\\t")
        elif ch == "\r": out.append("\\r")
        elif o < 0x20 or o == 0x7f: out.append("\\x%02x\"\"" % o)
        elif o > 0x7f: out.append("".join("\\x%02x\"\"" % b for b in ch.encode("utf-8")))
        else: out.append(ch)
    return '"' + "".join(out) + '"'

lines = ["// Generated by tests/data/jinja/gen_semantics.py from jinja2 " + render_hf.jinja2.__version__ + "; do not edit.",
         "// {template, what jinja2 renders or \"!Class: message\" when it raises}",
         "static const char* const kContextJson = " + cxx(json.dumps(CTX, ensure_ascii=False)) + ";",
         "static const SemanticsCase kCases[] = {"]
for src in CASES:
    lines.append("    {" + cxx(src) + ",\n     " + cxx(render(src)) + "},")
lines.append("};")
open("tests/jinja/jinja_semantics_cases.inc", "w", encoding="utf-8").write("\n".join(lines) + "\n")
print(len(CASES), "cases")
