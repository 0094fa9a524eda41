{% test expression_is_true(model, expression) %}
-- rows of `model` where the boolean SQL `expression` is not true (NULL counts as a failure: write the
-- condition under which it applies into the expression)
select * from {{ model }} where not coalesce(({{ expression }}), false)
{% endtest %}
